package app

import (
	"encoding/json"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/webhooks"
)

// hookJSON is a hook as the API shows it: "name" or "prefix", never both.
// Secret is set only in the answer that created the hook.
type hookJSON struct {
	ID         int64              `json:"id"`
	URL        string             `json:"url"`
	Name       *string            `json:"name,omitempty"`
	Prefix     *string            `json:"prefix,omitempty"`
	Thresholds []int64            `json:"thresholds"`
	Every      *int64             `json:"every"`
	Direction  webhooks.Direction `json:"direction"`
	CreatedAt  time.Time          `json:"created_at"`
	DisabledAt *time.Time         `json:"disabled_at"`
	Secret     string             `json:"secret,omitempty"`
}

func hookToJSON(h *webhooks.Hook) hookJSON {
	out := hookJSON{ID: h.ID, URL: h.URL, Thresholds: h.Thresholds, Direction: h.Direction, CreatedAt: h.CreatedAt, DisabledAt: h.DisabledAt}
	if out.Thresholds == nil {
		out.Thresholds = []int64{}
	}
	if h.Every > 0 {
		out.Every = &h.Every
	}
	target := h.Target
	if h.IsPrefix {
		out.Prefix = &target
	} else {
		out.Name = &target
	}
	return out
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

// webhookHandlers serves /v1/webhooks. Who may is keys.Service's to say.
type webhookHandlers struct {
	dbBudget
	svc webhooks.API
}

func registerWebhookRoutes(v1 fiber.Router, auth fiber.Handler, svc webhooks.API, budget dbBudget) {
	h := &webhookHandlers{dbBudget: budget, svc: svc}
	v1.Post("/webhooks", auth, h.create)
	v1.Get("/webhooks", auth, h.list)
	v1.Get("/webhooks/:id", auth, h.get)
	v1.Delete("/webhooks/:id", auth, h.delete)
	v1.Get("/webhooks/:id/deliveries", auth, h.deliveries)
	v1.Post("/webhooks/:id/enable", auth, h.enable)
	v1.Post("/webhooks/:id/rotate", auth, h.rotate)
}

// createHookRequest parses {"url", "name" or "prefix", "thresholds",
// "every", "direction"} strictly.
func createHookRequest(body []byte) (webhooks.CreateRequest, error) {
	var req webhooks.CreateRequest
	obj, err := parseObject(body, "url", "name", "prefix", "thresholds", "every", "direction")
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
	return req, err
}

func (h *webhookHandlers) create(c *fiber.Ctx) error {
	req, err := createHookRequest(c.Body())
	if err != nil {
		return err
	}
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
	out := struct {
		Webhooks []hookJSON `json:"webhooks"`
	}{make([]hookJSON, len(list))}
	for i := range list {
		out.Webhooks[i] = hookToJSON(&list[i])
	}
	return c.JSON(out)
}

func (h *webhookHandlers) get(c *fiber.Ctx) error {
	id, err := positiveParam(c, "id")
	if err != nil {
		return err
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	hook, err := h.svc.Get(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(hookToJSON(hook))
}

func (h *webhookHandlers) delete(c *fiber.Ctx) error {
	id, err := positiveParam(c, "id")
	if err != nil {
		return err
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	if err := h.svc.Delete(ctx, id); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func (h *webhookHandlers) enable(c *fiber.Ctx) error {
	id, err := positiveParam(c, "id")
	if err != nil {
		return err
	}
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
	id, err := positiveParam(c, "id")
	if err != nil {
		return err
	}
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
	id, err := positiveParam(c, "id")
	if err != nil {
		return err
	}
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
