package storage

import (
	"context"
	"database/sql"
	"errors"

	"github.com/countersvc/countersvc/annotations"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/foundation/deadline"
)

// AnnotationStore keeps annotations (the annotation table of migration
// 016): it implements annotations.Store. It uses no other store's tables:
// an annotation belongs to a name, not to a counter's row, so a counter's
// deletion leaves it (docs/annotations.md).
type AnnotationStore struct {
	db *sql.DB
}

var _ annotations.Store = (*AnnotationStore)(nil)

// NewAnnotationStore returns the annotations kept in db.
func NewAnnotationStore(db *DB) *AnnotationStore { return &AnnotationStore{db: db.DB} }

const annotationColumns = "id, target, is_prefix, at, text, created_at"

// within gives a call without a deadline the default one: every call of
// this store ends, whoever calls it.
func within(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, deadline.Default)
}

// CreateAnnotation implements annotations.Store: one INSERT, which a
// deadlock cannot meet (it takes no lock another statement waits on).
func (s *AnnotationStore) CreateAnnotation(ctx context.Context, a *annotations.Annotation) error {
	const op = "storage.CreateAnnotation"
	ctx, cancel := within(ctx)
	defer cancel()
	res, err := s.db.ExecContext(ctx, "INSERT INTO annotation (target, is_prefix, at, text, created_at) VALUES (?, ?, ?, ?, ?)",
		a.Target, a.IsPrefix, a.At, a.Text, a.CreatedAt)
	if err != nil {
		return mapError(op, err, true)
	}
	a.ID, err = res.LastInsertId()
	return mapError(op, err, true)
}

// Annotation implements annotations.Store.
func (s *AnnotationStore) Annotation(ctx context.Context, id int64) (*annotations.Annotation, error) {
	ctx, cancel := within(ctx)
	defer cancel()
	a, err := scanAnnotation(s.db.QueryRowContext(ctx, "SELECT "+annotationColumns+" FROM annotation WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, annotationNotFound(id)
	}
	return a, mapError("storage.Annotation", err, false)
}

// Annotations implements annotations.Store. What a name or a prefix sees
// (annotations.Query) is parts of the (target, at) key: the prefixes that
// hold the target, each by equality (a name of 255 bytes has at most 255
// of them), and the name itself or, for a prefix, the names and prefixes
// under it as one range.
func (s *AnnotationStore) Annotations(ctx context.Context, q annotations.Query, limit int) ([]annotations.Annotation, error) {
	const op = "storage.Annotations"
	ctx, cancel := within(ctx)
	defer cancel()
	holders := annotations.Holders(q.Target)
	where := "((is_prefix AND target IN (" + placeholders("?", ", ", len(holders)) + "))"
	var args []any
	for _, h := range holders {
		args = append(args, h)
	}
	if q.IsPrefix {
		where += " OR target LIKE ? ESCAPE '!'"
		args = append(args, likePrefix(q.Target))
	} else {
		where += " OR (NOT is_prefix AND target = ?)"
		args = append(args, q.Target)
	}
	where += ")"
	if !q.From.IsZero() {
		where += " AND at >= ?"
		args = append(args, q.From.UTC())
	}
	if !q.To.IsZero() {
		where += " AND at < ?"
		args = append(args, q.To.UTC())
	}
	rows, err := s.db.QueryContext(ctx, "SELECT "+annotationColumns+" FROM annotation WHERE "+where+" ORDER BY at, id LIMIT ?", append(args, limit)...)
	if err != nil {
		return nil, mapError(op, err, false)
	}
	defer rows.Close()
	list := []annotations.Annotation{}
	for rows.Next() {
		a, err := scanAnnotation(rows)
		if err != nil {
			return nil, mapError(op, err, false)
		}
		list = append(list, *a)
	}
	return list, mapError(op, rows.Err(), false)
}

// DeleteAnnotation implements annotations.Store.
func (s *AnnotationStore) DeleteAnnotation(ctx context.Context, id int64) error {
	const op = "storage.DeleteAnnotation"
	ctx, cancel := within(ctx)
	defer cancel()
	res, err := s.db.ExecContext(ctx, "DELETE FROM annotation WHERE id = ?", id)
	if err != nil {
		return mapError(op, err, true)
	}
	n, err := res.RowsAffected()
	if err == nil && n == 0 {
		return annotationNotFound(id)
	}
	return mapError(op, err, true)
}

func annotationNotFound(id int64) error {
	return counters.Errorf(counters.ENOTFOUND, "Annotation %d not found.", id)
}

func scanAnnotation(row scanner) (*annotations.Annotation, error) {
	var a annotations.Annotation
	if err := row.Scan(&a.ID, &a.Target, &a.IsPrefix, &a.At, &a.Text, &a.CreatedAt); err != nil {
		return nil, err
	}
	a.At, a.CreatedAt = a.At.UTC(), a.CreatedAt.UTC()
	return &a, nil
}
