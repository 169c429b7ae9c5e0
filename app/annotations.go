package app

import (
	"context"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/annotations"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/keys"
)

// annotationJSON is an annotation as the API shows it: "name" or
// "prefix", never both.
type annotationJSON struct {
	ID        int64     `json:"id"`
	Name      *string   `json:"name,omitempty"`
	Prefix    *string   `json:"prefix,omitempty"`
	At        time.Time `json:"at"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}

// annotationToJSON shows a with its moment in zone (a history's, for the
// annotations beside it; UTC otherwise).
func annotationToJSON(a *annotations.Annotation, zone *time.Location) annotationJSON {
	out := annotationJSON{ID: a.ID, At: a.At.In(zone), Text: a.Text, CreatedAt: a.CreatedAt}
	out.Name, out.Prefix = nameOrPrefix(a.Target, a.IsPrefix)
	return out
}

// annotationsAPI is what the HTTP API needs of annotations
// (annotations.Service).
type annotationsAPI interface {
	Create(ctx context.Context, r annotations.CreateRequest) (*annotations.Annotation, error)
	Get(ctx context.Context, id int64) (*annotations.Annotation, error)
	List(ctx context.Context, q annotations.Query) ([]annotations.Annotation, bool, error)
	Delete(ctx context.Context, id int64) error
}

type annotationHandlers struct {
	dbBudget
	svc annotationsAPI
}

// annotationsCapability is the annotations' routes, and the annotator
// that history and breakdown reads ask with annotations=true.
type annotationsCapability struct{ svc annotationsAPI }

// Annotations is the annotations capability: /v1/annotations, scoped as
// the names they annotate (a read key within the name or prefix reads
// them, a write key writes them), and the annotations beside history and
// breakdown answers (annotations=true), which New hands to their handlers.
func Annotations(svc annotationsAPI) Capability { return annotationsCapability{svc: svc} }

func (a annotationsCapability) routes(r router) {
	h := &annotationHandlers{dbBudget: r.dbBudget, svc: a.svc}
	r.private("POST", "/annotations", bodyAccess("write annotation's target", createAnnotationRequest,
		func(req annotations.CreateRequest, allow func(keys.Access, keys.Resource) error) error {
			if req.Prefix != "" {
				return allow(keys.Write, keys.Prefix(req.Prefix))
			}
			return allow(keys.Write, keys.Name(req.Name))
		}), h.create)
	r.private("GET", "/annotations", annotationQueryAccess(), h.list)
	r.private("DELETE", "/annotations/:id", h.annotationAccess(), h.delete)
}

// annotator is how history and breakdown handlers add the annotations of
// their answer's range without knowing the annotations package: nil when
// the service was built without them, whose answers then carry an empty
// list.
type annotator func(ctx context.Context, name, prefix string, from, to time.Time, zone *time.Location) (*[]annotationJSON, error)

// annotatorOf is the annotator of the annotations capability among caps.
func annotatorOf(caps []Capability) annotator {
	for _, c := range caps {
		if a, ok := c.(annotationsCapability); ok {
			return a.annotate
		}
	}
	return nil
}

func (a annotationsCapability) annotate(ctx context.Context, name, prefix string, from, to time.Time, zone *time.Location) (*[]annotationJSON, error) {
	q := annotations.Query{Target: name, From: from, To: to}
	if name == "" {
		q.Target, q.IsPrefix = prefix, true
	}
	list, _, err := a.svc.List(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]annotationJSON, len(list))
	for i := range list {
		out[i] = annotationToJSON(&list[i], zone)
	}
	return &out, nil
}

// of is the annotations of a range when asked (nil: not asked, left out
// of the answer). A public read (public not nil) answers only those on
// names and prefixes under the public prefixes: a note on a wider prefix
// that holds a public one ("hits") concerns private names too.
func (a annotator) of(ctx context.Context, asked bool, public publicNames, name, prefix string, from, to time.Time, zone *time.Location) (*[]annotationJSON, error) {
	switch {
	case !asked:
		return nil, nil
	case a == nil:
		return &[]annotationJSON{}, nil
	}
	list, err := a(ctx, name, prefix, from, to, zone)
	if err != nil || public == nil {
		return list, err
	}
	kept := (*list)[:0]
	for _, an := range *list {
		target := an.Name
		if target == nil {
			target = an.Prefix
		}
		if public.publicPrefix(*target) == nil {
			kept = append(kept, an)
		}
	}
	return &kept, nil
}

// createAnnotationRequest parses {"name" or "prefix", "at", "text"}
// strictly and checks it (annotations.CreateRequest.Validate).
func createAnnotationRequest(c *fiber.Ctx) (annotations.CreateRequest, error) {
	var req annotations.CreateRequest
	obj, err := parseObject(c.Body(), "name", "prefix", "at", "text")
	if err != nil {
		return req, err
	}
	if req.Name, _, err = obj.stringField("name"); err != nil {
		return req, err
	}
	if req.Prefix, _, err = obj.stringField("prefix"); err != nil {
		return req, err
	}
	if req.Text, err = obj.requiredString("text"); err != nil {
		return req, err
	}
	at, ok, err := obj.stringField("at")
	if err != nil {
		return req, err
	}
	if ok {
		if req.At, err = time.Parse(time.RFC3339Nano, at); err != nil {
			return req, counters.Errorf(counters.EINVALID, "\"at\" must be an RFC 3339 time such as 2025-04-17T09:00:00+02:00.")
		}
	}
	return req, req.Validate()
}

// annotationQueryAccess reads ?name= or ?prefix=, ?from=, ?to= and ?tz=
// and is read access to that name or prefix; the handler takes the query
// with checked[annotations.Query].
func annotationQueryAccess() access {
	return access{desc: "read annotation's target", check: func(g gate) error {
		qv := func(k string) string { return strings.Clone(g.c.Query(k)) }
		q, err := annotations.QueryRequest{Name: qv("name"), Prefix: qv("prefix"), From: qv("from"), To: qv("to"), Zone: qv("tz")}.Parse()
		if err != nil {
			return err
		}
		if err := g.allow(keys.Read, keys.Target(q.Target, q.IsPrefix)); err != nil {
			return err
		}
		g.c.Locals(localChecked, q)
		return nil
	}}
}

// annotationAccess is the write scope on the target of the path's
// annotation; the handler takes it with checked[*annotations.Annotation].
func (h *annotationHandlers) annotationAccess() access {
	return lookupAccess("write annotation's target", h.dbBudget, h.svc.Get,
		func(a *annotations.Annotation) keys.Resource { return keys.Target(a.Target, a.IsPrefix) })
}

func (h *annotationHandlers) create(c *fiber.Ctx) error {
	ctx, cancel := h.dbContext(c)
	defer cancel()
	a, err := h.svc.Create(ctx, checked[annotations.CreateRequest](c))
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(annotationToJSON(a, time.UTC))
}

func (h *annotationHandlers) list(c *fiber.Ctx) error {
	ctx, cancel := h.dbContext(c)
	defer cancel()
	list, truncated, err := h.svc.List(ctx, checked[annotations.Query](c))
	if err != nil {
		return err
	}
	out := struct {
		Annotations []annotationJSON `json:"annotations"`
		Truncated   bool             `json:"truncated"`
	}{make([]annotationJSON, len(list)), truncated}
	for i := range list {
		out.Annotations[i] = annotationToJSON(&list[i], time.UTC)
	}
	return c.JSON(out)
}

func (h *annotationHandlers) delete(c *fiber.Ctx) error {
	ctx, cancel := h.dbContext(c)
	defer cancel()
	if err := h.svc.Delete(ctx, checked[*annotations.Annotation](c).ID); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}
