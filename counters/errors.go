package counters

import (
	"errors"
	"fmt"
)

// Error codes. They are the codes of the public HTTP contract; only the HTTP
// layer maps them to statuses.
const (
	EINVALID         = "invalid_argument"
	EUNAUTHENTICATED = "unauthenticated"
	EPERMISSION      = "permission_denied"
	ENOTFOUND        = "not_found"
	ECONFLICT        = "conflict"
	ETOOLARGE        = "payload_too_large"
	EOUTOFRANGE      = "out_of_range"
	ERATELIMITED     = "rate_limited"
	EUNAVAILABLE     = "unavailable"
	EINTERNAL        = "internal"
)

// Error is the one error type of the service. Code and Message are safe to
// show to a client; Op and Err say where and why, for the log only.
type Error struct {
	Code    string
	Message string
	Op      string
	Err     error
}

func (e *Error) Error() string {
	s := e.Code + ": " + e.Message
	if e.Op != "" {
		s = e.Op + ": " + s
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an Error with a client-safe message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error that keeps cause for the log.
func Wrap(code, op string, cause error, message string) *Error {
	return &Error{Code: code, Message: message, Op: op, Err: cause}
}

// ErrorCode returns the code of the first Error in err's chain, or EINTERNAL
// for anything else: an unexpected error is a bug, never a client's fault.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the client-safe message of err. Causes that are not an
// Error get a generic message so that no SQL or driver text leaks.
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) && e.Code != EINTERNAL {
		return e.Message
	}
	return "An internal error has occurred."
}
