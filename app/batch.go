package app

import (
	"bytes"
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/keys"
)

type batchJSON struct {
	Counters []valueJSON `json:"counters"`
}

func toBatchJSON(items []counters.Increment, values []int64) batchJSON {
	out := batchJSON{Counters: make([]valueJSON, len(items))}
	for i, it := range items {
		out.Counters[i] = valueJSON{Name: it.Name, Value: values[i]}
	}
	return out
}

// batchItems parses {"increments": [{"name": "...", "by": n}, ...]}
// strictly. Errors name the first bad item; a reserved name is 403, as for
// a single increment.
func batchItems(body []byte, field ExtraField) ([]counters.Increment, error) {
	obj, err := parseObject(body, "increments")
	if err != nil {
		return nil, err
	}
	raw, ok := obj["increments"]
	if !ok {
		return nil, counters.Errorf(counters.EINVALID, "The body must give \"increments\", a list of {\"name\", \"by\"}.")
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil || list == nil {
		return nil, counters.Errorf(counters.EINVALID, "\"increments\" must be a list of {\"name\", \"by\"}.")
	}
	if len(list) == 0 || len(list) > counters.MaxBatch {
		return nil, counters.Errorf(counters.EINVALID, "A batch carries 1 to %d increments, not %d.", counters.MaxBatch, len(list))
	}
	items := make([]counters.Increment, len(list))
	for i, r := range list {
		if items[i], err = batchItem(r, field); err != nil {
			return nil, counters.ItemError(i, items[i].Name, err)
		}
	}
	return items, nil
}

func batchItem(raw json.RawMessage, field ExtraField) (it counters.Increment, err error) {
	if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || trimmed[0] != '{' {
		return it, counters.Errorf(counters.EINVALID, "Each increment must be an object {\"name\", \"by\"}.")
	}
	obj, err := parseObject(raw, "name", "by", field.Key)
	if err != nil {
		return it, err
	}
	name, ok, err := obj.stringField("name")
	if err != nil {
		return it, err
	} else if !ok {
		return it, counters.Errorf(counters.EINVALID, "The increment must give a \"name\".")
	}
	it.Name = name
	if it.By, ok, err = obj.int64Field("by"); err != nil {
		return it, err
	} else if !ok {
		return it, counters.Errorf(counters.EINVALID, "The increment must give \"by\".")
	}
	if err := counters.ValidateName(name); err != nil {
		return it, err
	}
	if it.Extra, err = field.of(obj); err != nil {
		return it, err
	}
	if counters.IsReserved(name) {
		return it, errReserved()
	}
	return it, nil
}

// batchAccess checks every item's name; a refusal names the first
// refused item.
func batchAccess(field ExtraField) access {
	parse := func(c *fiber.Ctx) ([]counters.Increment, error) { return batchItems(c.Body(), field) }
	return bodyAccess("write items", parse, func(items []counters.Increment, allow func(keys.Access, keys.Resource) error) error {
		for i, it := range items {
			if err := allow(keys.Write, keys.Name(it.Name)); err != nil {
				return counters.ItemError(i, it.Name, err)
			}
		}
		return nil
	})
}

func (h *counterHandlers) batch(c *fiber.Ctx) error {
	items := checked[[]counters.Increment](c)
	ctx, cancel := h.dbContext(c)
	defer cancel()
	if !hasIdempotencyKey(c) {
		values, err := h.svc.Batch(ctx, items)
		if err != nil {
			return err
		}
		return c.JSON(toBatchJSON(items, values))
	}
	key, err := idempotencyKey(c, items)
	if err != nil {
		return err
	}
	values, replayed, err := h.svc.BatchOnce(ctx, key, items)
	if markReplayed(c, replayed, err); err != nil {
		return err
	}
	return c.JSON(toBatchJSON(items, values))
}
