package app

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/counters"
)

// Codes that only the HTTP layer answers: no domain operation returns them.
const (
	codeMethodNotAllowed     = "method_not_allowed"     // 405, with Allow
	codeUnsupportedMediaType = "unsupported_media_type" // 415
)

// statusOf is the one place where error codes become HTTP statuses.
var statusOf = map[string]int{
	codeMethodNotAllowed:      fiber.StatusMethodNotAllowed,
	codeUnsupportedMediaType:  fiber.StatusUnsupportedMediaType,
	counters.EINVALID:         fiber.StatusBadRequest,
	counters.EUNAUTHENTICATED: fiber.StatusUnauthorized,
	counters.EPERMISSION:      fiber.StatusForbidden,
	counters.ENOTFOUND:        fiber.StatusNotFound,
	counters.ECONFLICT:        fiber.StatusConflict,
	counters.ETOOLARGE:        fiber.StatusRequestEntityTooLarge,
	counters.EOUTOFRANGE:      fiber.StatusUnprocessableEntity,
	counters.ERATELIMITED:     fiber.StatusTooManyRequests,
	counters.EUNAVAILABLE:     fiber.StatusServiceUnavailable,
	counters.EINTERNAL:        fiber.StatusInternalServerError,
}

// codeOfStatus maps Fiber's own errors (unknown route, body too large, ...)
// into the contract's codes.
var codeOfStatus = map[int]string{
	fiber.StatusBadRequest:                  counters.EINVALID,
	fiber.StatusNotFound:                    counters.ENOTFOUND,
	fiber.StatusMethodNotAllowed:            codeMethodNotAllowed,
	fiber.StatusNotImplemented:              counters.EINVALID,
	fiber.StatusRequestEntityTooLarge:       counters.ETOOLARGE,
	fiber.StatusRequestHeaderFieldsTooLarge: counters.ETOOLARGE,
	fiber.StatusUnsupportedMediaType:        codeUnsupportedMediaType,
	fiber.StatusTooManyRequests:             counters.ERATELIMITED,
	fiber.StatusServiceUnavailable:          counters.EUNAVAILABLE,
}

type errorBody struct {
	Error  errorDetail `json:"error"`
	Report any         `json:"report,omitempty"` // what a failed import did (app/import.go)
}

// reportedError is an error whose answer also carries a report of what the
// request did before it failed.
type reportedError struct {
	error
	report any
}

func (e *reportedError) Unwrap() error { return e.error }

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// toDomain converts any handler error into a domain error.
func toDomain(err error) error {
	var fe *fiber.Error
	if errors.As(err, &fe) {
		code, ok := codeOfStatus[fe.Code]
		if !ok {
			code = counters.EINTERNAL
		}
		msg := fe.Message
		switch fe.Code {
		case fiber.StatusNotFound:
			msg = "No such endpoint."
		case fiber.StatusMethodNotAllowed:
			msg = "This endpoint does not answer this method; the Allow header lists those it does."
		case fiber.StatusNotImplemented:
			msg = "Unknown HTTP method."
		case fiber.StatusRequestEntityTooLarge:
			msg = "Request body is too large."
		}
		return &counters.Error{Code: code, Message: msg, Err: err}
	}
	return err
}

// retryAfter is the Retry-After of a 503 and of a 429 whose limiter gave
// none: one second, short enough that a client's retry is not kept waiting
// for a database that is back, long enough that a dead one is not hammered.
const retryAfter = "1"

// setRetryAfter tells the client when to try again, keeping a more precise
// Retry-After that a limiter has already set.
func setRetryAfter(c *fiber.Ctx) {
	if len(c.Response().Header.Peek(fiber.HeaderRetryAfter)) == 0 {
		c.Set(fiber.HeaderRetryAfter, retryAfter)
	}
}

// methodStatus keeps Fiber's answer about a method the service does not
// know: 501 (RFC 9110 15.6.2). The contract has no code of its own for it:
// the body says invalid_argument. (A 405 has its own code.)
func methodStatus(err error) (int, bool) {
	var fe *fiber.Error
	if errors.As(err, &fe) && fe.Code == fiber.StatusNotImplemented {
		return fe.Code, true
	}
	return 0, false
}

// outageLog lets the log have one 503 a second, with how many it left out
// since the last: during an outage every request is answered 503 (tens of
// thousands a minute), and a line each would bury the log and cost the
// service writing it. A 500 (a bug) is always logged.
type outageLog struct {
	mu      sync.Mutex
	next    time.Time
	skipped int
}

// admit reports whether a 503 at now is logged, and how many were left out
// before it.
func (o *outageLog) admit(now time.Time) (bool, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if now.Before(o.next) {
		o.skipped++
		return false, 0
	}
	skipped := o.skipped
	o.next, o.skipped = now.Add(time.Second), 0
	return true, skipped
}

// errorHandler writes every error as the contract's JSON error. Internal
// causes go to the log, never to the client.
func errorHandler(log *slog.Logger) fiber.ErrorHandler {
	var outages outageLog
	return func(c *fiber.Ctx, err error) error {
		err = toDomain(err)
		code := counters.ErrorCode(err)
		status := statusOf[code]
		if s, ok := methodStatus(err); ok {
			status = s
		}
		if status == fiber.StatusServiceUnavailable {
			if ok, skipped := outages.admit(time.Now()); ok {
				log.Warn("request unavailable", "request_id", requestID(c), "method", c.Method(),
					"path", c.Path(), "status", status, "error", err.Error(), "unavailable_not_logged", skipped)
			}
		} else if status >= 500 {
			log.Error("request failed", "request_id", requestID(c), "method", c.Method(),
				"path", c.Path(), "status", status, "error", err.Error())
		}
		if code == counters.ERATELIMITED || status == fiber.StatusServiceUnavailable {
			setRetryAfter(c)
		}
		if code == codeMethodNotAllowed && publicPath(c.Path()) {
			c.Set(fiber.HeaderAccessControlAllowOrigin, "*")
			c.Set(fiber.HeaderCacheControl, "no-store")
		}
		if drawError(c, err, code, status) {
			return nil
		}
		body := errorBody{Error: errorDetail{Code: code, Message: counters.ErrorMessage(err)}}
		var re *reportedError
		if errors.As(err, &re) {
			body.Report = re.report
		}
		return c.Status(status).JSON(body)
	}
}
