package app

import (
	"strconv"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
)

// sendValue answers {"name": ..., "value": ...}, the hottest response of the
// service, without reflection. The bytes are exactly what encoding/json
// writes for valueJSON (its HTML-safe escaping included); a test holds them
// to that.
//
// The answer is made in an array on the stack (only a longer one moves to
// the heap) and copied into the response's own pooled buffer (SetBody,
// where c.Send would keep the slice itself): no allocation.
func sendValue(c *fiber.Ctx, name string, value int64) error {
	var a [128]byte
	resp := c.Response()
	resp.Header.SetContentType(fiber.MIMEApplicationJSON) // as c.Set, without normalizing the name
	resp.SetBody(appendValueJSON(a[:0], name, value))
	return nil
}

func appendValueJSON(buf []byte, name string, value int64) []byte {
	buf = append(buf, `{"name":`...)
	buf = appendJSONString(buf, name)
	buf = append(buf, `,"value":`...)
	buf = strconv.AppendInt(buf, value, 10)
	return append(buf, '}')
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s the way encoding/json does.
func appendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch b {
			case '"', '\\':
				buf = append(buf, '\\', b)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
