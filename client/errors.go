package client

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Code is one of the API's error codes. A Code is itself an error, so that
// errors.Is(err, client.NotFound) tests an answer's code.
type Code string

// The API's error codes (openapi.yaml, "Conventions").
const (
	InvalidArgument      Code = "invalid_argument"       // 400: a bad name, body or parameter
	Unauthenticated      Code = "unauthenticated"        // 401: a token is needed, or it is unknown, revoked or expired
	PermissionDenied     Code = "permission_denied"      // 403: outside the key's scope or prefixes, or a reserved name
	NotFound             Code = "not_found"              // 404
	MethodNotAllowed     Code = "method_not_allowed"     // 405: the path does not serve the method
	Conflict             Code = "conflict"               // 409: exists already, or an idempotency key reused for another request
	PayloadTooLarge      Code = "payload_too_large"      // 413
	UnsupportedMediaType Code = "unsupported_media_type" // 415: a body that is not JSON by its Content-Type
	OutOfRange           Code = "out_of_range"           // 422: past int64 or the counter's bounds; nothing changed
	RateLimited          Code = "rate_limited"           // 429
	Unavailable          Code = "unavailable"            // 503 (and a proxy's 502 and 504): MySQL or the service cannot be reached
	Internal             Code = "internal"               // 500
)

func (c Code) Error() string { return string(c) }

// codeOfStatus names the code of an answer that did not carry the API's
// error shape, such as a proxy's 502 page.
var codeOfStatus = map[int]Code{
	http.StatusBadRequest:            InvalidArgument,
	http.StatusUnauthorized:          Unauthenticated,
	http.StatusForbidden:             PermissionDenied,
	http.StatusNotFound:              NotFound,
	http.StatusMethodNotAllowed:      MethodNotAllowed,
	http.StatusConflict:              Conflict,
	http.StatusRequestEntityTooLarge: PayloadTooLarge,
	http.StatusUnsupportedMediaType:  UnsupportedMediaType,
	http.StatusUnprocessableEntity:   OutOfRange,
	http.StatusTooManyRequests:       RateLimited,
	http.StatusBadGateway:            Unavailable,
	http.StatusServiceUnavailable:    Unavailable,
	http.StatusGatewayTimeout:        Unavailable,
}

// Error is an error answer of the service.
type Error struct {
	Status    int    // the HTTP status
	Code      Code   // the API's code
	Message   string // the service's sentence, for people
	RequestID string // X-Request-ID, to find the request in the service's logs
	// Report is what a failed import did before it failed, if the answer
	// carried one.
	Report *ImportReport
	// Body is the answer as the service sent it.
	Body []byte
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (%s, %d)", strings.TrimSuffix(e.Message, "."), e.Code, e.Status)
}

// Is reports whether target is e's Code, for errors.Is.
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && c == e.Code
}

// readError turns a non-2xx answer into an *Error, and closes its body.
func readError(res *http.Response) error {
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	e := &Error{Status: res.StatusCode, RequestID: res.Header.Get("X-Request-ID"), Body: b}
	var shape struct {
		Error struct {
			Code    Code   `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Report *ImportReport `json:"report"`
	}
	if json.Unmarshal(b, &shape) == nil && shape.Error.Code != "" {
		e.Code, e.Message, e.Report = shape.Error.Code, shape.Error.Message, shape.Report
		return e
	}
	e.Code = codeOfStatus[res.StatusCode]
	if e.Code == "" {
		e.Code = Internal
	}
	e.Message = fmt.Sprintf("The service answered %s without the API's error body.", res.Status)
	return e
}
