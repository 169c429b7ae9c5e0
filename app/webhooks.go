package app

import (
	"encoding/json"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/keys"
	"github.com/countersvc/countersvc/webhooks"
)

// hookJSON is a hook as the API shows it: "name" or "prefix", never both;
// a threshold hook's "thresholds", "every" and "direction", or an alert's
// "window" and "above" or "below". Secret is set only in the answer that
// created the hook.
type hookJSON struct {
	ID     int64   `json:"id"`
	URL    string  `json:"url"`
	Name   *string `json:"name,omitempty"`
	Prefix *string `json:"prefix,omitempty"`
	*thresholdsJSON
	*alertJSON
	CreatedAt  time.Time  `json:"created_at"`
	DisabledAt *time.Time `json:"disabled_at"`
	Secret     string     `json:"secret,omitempty"`
}

type thresholdsJSON struct {
	Thresholds []int64            `json:"thresholds"`
	Every      *int64             `json:"every"`
	Direction  webhooks.Direction `json:"direction"`
}

type alertJSON struct {
	Window string `json:"window"`
	Above  *int64 `json:"above,omitempty"`
	Below  *int64 `json:"below,omitempty"`
}

func hookToJSON(h *webhooks.Hook) hookJSON {
	out := hookJSON{ID: h.ID, URL: h.URL, CreatedAt: h.CreatedAt, DisabledAt: h.DisabledAt}
	if a := h.Alert; a != nil {
		out.alertJSON = &alertJSON{Window: webhooks.FormatWindow(a.Window)}
		if n := a.N; a.Above {
			out.Above = &n
		} else {
			out.Below = &n
		}
	} else {
		out.thresholdsJSON = &thresholdsJSON{Thresholds: h.Thresholds, Direction: h.Direction}
		if out.Thresholds == nil {
			out.Thresholds = []int64{}
		}
		if h.Every > 0 {
			out.Every = &h.Every
		}
	}
	out.Name, out.Prefix = nameOrPrefix(h.Target, h.IsPrefix)
	return out
}

// nameOrPrefix is a target as hooks and annotations show it: "name", or
// "prefix" when it is one.
func nameOrPrefix(target string, isPrefix bool) (name, prefix *string) {
	if isPrefix {
		return nil, &target
	}
	return &target, nil
}

// deliveryJSON is one delivery; Event is the body exactly as sent.
type deliveryJSON struct {
	ID             string          `json:"id"`
	Status         webhooks.Status `json:"status"`
	Attempts       int             `json:"attempts"`
	LastStatusCode *int            `json:"last_status_code"`
	NextAttemptAt  *time.Time      `json:"next_attempt_at"`
	CreatedAt      time.Time       `json:"created_at"`
	Event          json.RawMessage `json:"event"`
}

// webhookHandlers serves /v1/webhooks.
type webhookHandlers struct {
	dbBudget
	svc webhooks.API
}

// Webhooks is the webhooks capability: /v1/webhooks. A hook is the
// admin's, or a write key's whose prefixes take in the hook's counter name
// or prefix; a key sees only such hooks in the list, and the hooks it
// creates count against its own limit.
func Webhooks(svc webhooks.API) Capability {
	return capabilityFunc(func(r router) {
		h := &webhookHandlers{dbBudget: r.dbBudget, svc: svc}
		parse := func(c *fiber.Ctx) (webhooks.CreateRequest, error) { return createHookRequest(c.Body()) }
		r.private("POST", "/webhooks", bodyAccess("write hook's target", parse, func(req webhooks.CreateRequest, allow func(keys.Access, keys.Resource) error) error {
			switch {
			case req.Name != "" && req.Prefix != "": // both given: the domain refuses it
			case req.Prefix != "":
				return allow(keys.Write, keys.Prefix(req.Prefix))
			case req.Name != "":
				return allow(keys.Write, keys.Name(req.Name))
			}
			return allow(keys.Write, keys.Anything())
		}), h.create)
		r.private("GET", "/webhooks", scopeAccess(keys.Write), h.list)
		r.private("GET", "/webhooks/:id", h.hookAccess(), h.get)
		r.private("DELETE", "/webhooks/:id", h.hookAccess(), h.delete)
		r.private("GET", "/webhooks/:id/deliveries", h.hookAccess(), h.deliveries)
		r.private("POST", "/webhooks/:id/enable", h.hookAccess(), h.enable)
		r.private("POST", "/webhooks/:id/rotate", h.hookAccess(), h.rotate)
	})
}

// hookAccess is the write scope on the target of the path's hook, which
// is looked up once the scope is there; the handler takes the hook with
// checked[*webhooks.Hook].
func (h *webhookHandlers) hookAccess() access {
	return lookupAccess("write hook's target", h.dbBudget, h.svc.Get,
		func(hook *webhooks.Hook) keys.Resource { return keys.Target(hook.Target, hook.IsPrefix) })
}

// createHookRequest parses {"url", "name" or "prefix", "thresholds",
// "every", "direction"} or {"url", "name" or "prefix", "window", "above"
// or "below"} strictly; the domain refuses a mix.
func createHookRequest(body []byte) (webhooks.CreateRequest, error) {
	var req webhooks.CreateRequest
	obj, err := parseObject(body, "url", "name", "prefix", "thresholds", "every", "direction", "window", "above", "below")
	if err != nil {
		return req, err
	}
	if req.URL, err = obj.requiredString("url"); err != nil {
		return req, err
	}
	if req.Name, _, err = obj.stringField("name"); err != nil {
		return req, err
	}
	if req.Prefix, _, err = obj.stringField("prefix"); err != nil {
		return req, err
	}
	if raw, ok := obj["thresholds"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &req.Thresholds); err != nil {
			return req, counters.Errorf(counters.EINVALID, "\"thresholds\" must be a list of integers.")
		}
	}
	if raw, ok := obj["every"]; ok && string(raw) != "null" {
		if req.Every, _, err = obj.int64Field("every"); err != nil || req.Every < 1 {
			return req, counters.Errorf(counters.EINVALID, "\"every\" must be a positive integer.")
		}
	}
	dir, _, err := obj.stringField("direction")
	req.Direction = webhooks.Direction(dir)
	if err != nil {
		return req, err
	}
	if req.Window, _, err = obj.stringField("window"); err != nil {
		return req, err
	}
	for _, f := range []struct {
		key string
		to  **int64
	}{{"above", &req.Above}, {"below", &req.Below}} {
		if raw, ok := obj[f.key]; ok && string(raw) != "null" {
			n, _, err := obj.int64Field(f.key)
			if err != nil || n < 1 {
				return req, counters.Errorf(counters.EINVALID, "%q must be a positive integer: the sum of the steps counted over the window.", f.key)
			}
			*f.to = &n
		}
	}
	return req, nil
}

func (h *webhookHandlers) create(c *fiber.Ctx) error {
	req := checked[webhooks.CreateRequest](c)
	req.Owner = principal(c).KeyID()
	ctx, cancel := h.dbContext(c)
	defer cancel()
	hook, err := h.svc.Create(ctx, req)
	if err != nil {
		return err
	}
	out := hookToJSON(hook)
	out.Secret = hook.Secret
	c.Set(fiber.HeaderCacheControl, "no-store") // the secret must not stay in any cache
	return c.Status(fiber.StatusCreated).JSON(out)
}

func (h *webhookHandlers) list(c *fiber.Ctx) error {
	ctx, cancel := h.dbContext(c)
	defer cancel()
	list, err := h.svc.List(ctx)
	if err != nil {
		return err
	}
	if p := principal(c); !p.IsAdmin() {
		kept := list[:0]
		for _, hook := range list {
			if p.May(keys.Write, keys.Target(hook.Target, hook.IsPrefix)) == nil {
				kept = append(kept, hook)
			}
		}
		list = kept
	}
	out := struct {
		Webhooks []hookJSON `json:"webhooks"`
	}{make([]hookJSON, len(list))}
	for i := range list {
		out.Webhooks[i] = hookToJSON(&list[i])
	}
	return c.JSON(out)
}

func (h *webhookHandlers) get(c *fiber.Ctx) error {
	return c.JSON(hookToJSON(checked[*webhooks.Hook](c)))
}

func (h *webhookHandlers) delete(c *fiber.Ctx) error {
	id := checked[*webhooks.Hook](c).ID
	ctx, cancel := h.dbContext(c)
	defer cancel()
	if err := h.svc.Delete(ctx, id); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func (h *webhookHandlers) enable(c *fiber.Ctx) error {
	id := checked[*webhooks.Hook](c).ID
	ctx, cancel := h.dbContext(c)
	defer cancel()
	hook, err := h.svc.Enable(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(hookToJSON(hook))
}

// rotate answers the hook with its new secret, shown here only, and until
// when the secret it replaced signs too; never that secret.
func (h *webhookHandlers) rotate(c *fiber.Ctx) error {
	id := checked[*webhooks.Hook](c).ID
	ctx, cancel := h.dbContext(c)
	defer cancel()
	hook, err := h.svc.Rotate(ctx, id)
	if err != nil {
		return err
	}
	out := struct {
		hookJSON
		PreviousUntil *time.Time `json:"previous_secret_expires_at"`
	}{hookToJSON(hook), hook.PreviousUntil}
	out.Secret = hook.Secret
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(out)
}

func (h *webhookHandlers) deliveries(c *fiber.Ctx) error {
	id := checked[*webhooks.Hook](c).ID
	limit, given, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	if given && (limit < 1 || limit > webhooks.MaxDeliveries) {
		return counters.Errorf(counters.EINVALID, "\"limit\" must be 1 to %d.", webhooks.MaxDeliveries)
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	list, err := h.svc.Deliveries(ctx, id, int(limit))
	if err != nil {
		return err
	}
	out := struct {
		Deliveries []deliveryJSON `json:"deliveries"`
	}{make([]deliveryJSON, len(list))}
	for i, d := range list {
		out.Deliveries[i] = deliveryJSON{ID: d.ID, Status: d.Status, Attempts: d.Attempts, LastStatusCode: d.LastStatusCode,
			NextAttemptAt: d.NextAttemptAt, CreatedAt: d.CreatedAt, Event: d.Event}
	}
	return c.JSON(out)
}
