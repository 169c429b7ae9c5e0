package storage

import "database/sql"

// scanPage reads a keyset page from rows selected with LIMIT limit+1: the
// extra row only tells that another page follows, and next is then the key
// of the last row kept.
func scanPage[T, K any](rows *sql.Rows, limit int, scan func(scanner) (*T, error), key func(*T) K) (items []T, next *K, err error) {
	defer rows.Close()
	items = make([]T, 0, limit)
	for rows.Next() {
		item, err := scan(rows)
		if err != nil {
			return nil, nil, err
		}
		if len(items) == limit {
			k := key(&items[len(items)-1])
			next = &k
			break
		}
		items = append(items, *item)
	}
	return items, next, rows.Err()
}
