package app

import (
	"encoding/json"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/keys"
)

// keyJSON is a key as the API shows it. Secret is set only in the answer
// that created the key.
type keyJSON struct {
	ID         int64        `json:"id"`
	Name       string       `json:"name"`
	Scopes     []keys.Scope `json:"scopes"`
	Prefixes   []string     `json:"prefixes"`
	Companies  []int64      `json:"companies"`
	CreatedAt  time.Time    `json:"created_at"`
	ExpiresAt  *time.Time   `json:"expires_at"`
	LastUsedAt *time.Time   `json:"last_used_at"`
	Secret     string       `json:"secret,omitempty"`
}

func keyToJSON(k *keys.Key) keyJSON {
	return keyJSON{ID: k.ID, Name: k.Name, Scopes: k.Scopes, Prefixes: k.Prefixes, Companies: k.Companies,
		CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, LastUsedAt: k.LastUsedAt}
}

// keyHandlers serves /v1/keys. Who may is keys.Service's to say.
type keyHandlers struct {
	dbBudget
	keys *keys.Service
}

func registerKeyRoutes(v1 fiber.Router, auth fiber.Handler, k *keys.Service, budget dbBudget) {
	h := &keyHandlers{dbBudget: budget, keys: k}
	v1.Post("/keys", auth, h.create)
	v1.Get("/keys", auth, h.list)
	v1.Get("/keys/:id", auth, h.get)
	v1.Delete("/keys/:id", auth, h.revoke)
}

// createKeyRequest parses {"name", "scopes", "prefixes", "companies",
// "expires_at"} strictly.
func createKeyRequest(body []byte) (keys.CreateRequest, error) {
	var req keys.CreateRequest
	obj, err := parseObject(body, "name", "scopes", "prefixes", "companies", "expires_at")
	if err != nil {
		return req, err
	}
	if req.Name, err = obj.requiredString("name"); err != nil {
		return req, err
	}
	lists := []struct {
		key, want string
		dst       any
	}{
		{"scopes", "a list of \"read\", \"write\" and \"admin\"", &req.Scopes},
		{"prefixes", "a list of strings", &req.Prefixes},
		{"companies", "a list of company ids", &req.Companies},
	}
	for _, l := range lists {
		if raw, ok := obj[l.key]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, l.dst); err != nil {
				return req, counters.Errorf(counters.EINVALID, "%q must be %s.", l.key, l.want)
			}
		}
	}
	if raw, ok := obj["expires_at"]; ok && string(raw) != "null" {
		var s string
		t, err := time.Time{}, json.Unmarshal(raw, &s)
		if err == nil {
			t, err = time.Parse(time.RFC3339, s)
		}
		if err != nil {
			return req, counters.Errorf(counters.EINVALID, "\"expires_at\" must be an RFC 3339 time such as 2030-01-31T00:00:00Z, or null.")
		}
		t = t.UTC().Truncate(time.Microsecond) // as MySQL keeps it
		req.ExpiresAt = &t
	}
	return req, nil
}

func (h *keyHandlers) create(c *fiber.Ctx) error {
	req, err := createKeyRequest(c.Body())
	if err != nil {
		return err
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	k, secret, err := h.keys.Create(ctx, req)
	if err != nil {
		return err
	}
	out := keyToJSON(k)
	out.Secret = secret
	c.Set(fiber.HeaderCacheControl, "no-store") // the secret must not stay in any cache
	return c.Status(fiber.StatusCreated).JSON(out)
}

func (h *keyHandlers) list(c *fiber.Ctx) error {
	ctx, cancel := h.dbContext(c)
	defer cancel()
	list, err := h.keys.List(ctx)
	if err != nil {
		return err
	}
	out := struct {
		Keys []keyJSON `json:"keys"`
	}{make([]keyJSON, len(list))}
	for i := range list {
		out.Keys[i] = keyToJSON(&list[i])
	}
	return c.JSON(out)
}

func (h *keyHandlers) get(c *fiber.Ctx) error {
	id, err := positiveParam(c, "id")
	if err != nil {
		return err
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	k, err := h.keys.Get(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(keyToJSON(k))
}

func (h *keyHandlers) revoke(c *fiber.Ctx) error {
	id, err := positiveParam(c, "id")
	if err != nil {
		return err
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	if err := h.keys.Revoke(ctx, id); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}
