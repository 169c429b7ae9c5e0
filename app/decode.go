package app

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/counters"
)

// pathName returns the counter name of the :name segment, percent-decoded
// and validated. The result is a fresh string: Fiber reuses its buffers.
func pathName(c *fiber.Ctx, param string) (string, error) {
	raw := c.Params(param)
	name, err := url.PathUnescape(raw)
	if err != nil {
		return "", counters.Errorf(counters.EINVALID, "The name in the path is not correctly percent-encoded.")
	}
	if name == raw {
		name = string([]byte(raw)) // PathUnescape returned Fiber's own memory
	}
	return name, counters.ValidateName(name)
}

// writableName is pathName for requests that change the counter: reserved
// names are refused.
func writableName(c *fiber.Ctx) (string, error) {
	name, err := pathName(c, "name")
	if err != nil {
		return "", err
	}
	if counters.IsReserved(name) {
		return "", errReserved()
	}
	return name, nil
}

func errReserved() error {
	return counters.Errorf(counters.EPERMISSION, "Names starting with %q are reserved and cannot be changed through the API.", counters.ReservedPrefix)
}

// jsonObject is a request body parsed strictly: an object whose keys must
// all be known to the handler.
type jsonObject map[string]json.RawMessage

// parseObject parses body as one JSON object with only the allowed keys
// ("" allows none: the zero ExtraField's key). An empty body is an empty
// object: a nil one, which reads as empty and costs no allocation (most
// increments have no body). The object is only read, never written.
func parseObject(body []byte, allowed ...string) (jsonObject, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	var obj jsonObject
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return nil, counters.Errorf(counters.EINVALID, "The request body must be a JSON object.")
	}
	for key := range obj {
		known := false
		for _, a := range allowed {
			known = known || key == a && a != ""
		}
		if !known {
			return nil, counters.Errorf(counters.EINVALID, "Unknown field %q.", key)
		}
	}
	return obj, nil
}

// int64Field reads an integer field; ok is false when the field is absent.
// Fractions, exponents, strings, null and numbers outside int64 are refused.
func (o jsonObject) int64Field(key string) (v int64, ok bool, err error) {
	raw, ok := o[key]
	if !ok {
		return 0, false, nil
	}
	v, err = strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, true, counters.Errorf(counters.EINVALID, "%q must be an integer between -9223372036854775808 and 9223372036854775807.", key)
	}
	return v, true, nil
}

// boundField reads min or max: an integer, null (unbounded), or absent (keep).
func (o jsonObject) boundField(key string) (counters.Bound, error) {
	raw, ok := o[key]
	if !ok {
		return counters.Bound{Keep: true}, nil
	}
	if string(raw) == "null" {
		return counters.Bound{}, nil
	}
	v, _, err := o.int64Field(key)
	if err != nil {
		return counters.Bound{}, counters.Errorf(counters.EINVALID, "%q must be an integer or null.", key)
	}
	return counters.Bound{Value: &v}, nil
}

func (o jsonObject) stringField(key string) (string, bool, error) {
	raw, ok := o[key]
	if !ok {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || string(raw) == "null" {
		return "", true, counters.Errorf(counters.EINVALID, "%q must be a string.", key)
	}
	return s, true, nil
}

// An ExtraField reads what else an increment counts (counters.Extra)
// from a field of its body, for the capability that counts it (the
// breakdowns' "labels", LabelsField). The increment and batch handlers
// take the field among theirs and hand what it read to the service
// without knowing it. The zero ExtraField reads no field.
type ExtraField struct {
	Key string
	// Read reads the field's raw JSON: a value its kind checked, nil for
	// none, or an EINVALID error.
	Read func(raw json.RawMessage) (counters.Extra, error)
}

// of reads the field from o; absent, nil.
func (f ExtraField) of(o jsonObject) (counters.Extra, error) {
	raw, ok := o[f.Key]
	if !ok || f.Key == "" {
		return nil, nil
	}
	return f.Read(raw)
}

func (o jsonObject) boolField(key string) (bool, bool, error) {
	raw, ok := o[key]
	if !ok {
		return false, false, nil
	}
	switch string(raw) {
	case "true":
		return true, true, nil
	case "false":
		return false, true, nil
	}
	return false, true, counters.Errorf(counters.EINVALID, "%q must be true or false.", key)
}

// queryInt parses an optional integer query parameter.
func queryInt(c *fiber.Ctx, key string) (int64, bool, error) {
	if len(c.Request().URI().QueryString()) == 0 {
		return 0, false, nil // no query at all (most increments): nothing to parse
	}
	raw := c.Query(key)
	if raw == "" {
		return 0, c.Context().QueryArgs().Has(key), emptyQuery(c, key)
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, true, counters.Errorf(counters.EINVALID, "Query parameter %q must be an integer.", key)
	}
	return v, true, nil
}

func emptyQuery(c *fiber.Ctx, key string) error {
	if c.Context().QueryArgs().Has(key) {
		return counters.Errorf(counters.EINVALID, "Query parameter %q must not be empty.", key)
	}
	return nil
}

// queryChoice reads an optional query parameter that takes one of
// choices: "" when absent, EINVALID when empty or anything else.
func queryChoice(c *fiber.Ctx, key string, choices ...string) (string, error) {
	v := c.Query(key)
	if v == "" {
		return "", emptyQuery(c, key)
	}
	for _, choice := range choices {
		if v == choice {
			return choice, nil
		}
	}
	return "", counters.Errorf(counters.EINVALID, "Query parameter %q must be %s.", key, strings.Join(choices, " or "))
}
