package app

import (
	"bufio"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// authHeaders finds, in one pass, the first Authorization header and any
// forwarding header with a value, whatever the case its name was sent in,
// among other headers (a cookie, a body's length).
func TestAuthHeadersFindsTheTokenAndAnyForwardingHeader(t *testing.T) {
	tests := []struct {
		name          string
		headers       string
		authorization string
		forwarded     bool
	}{
		{"none", "", "", false},
		{"a bearer", "Authorization: Bearer k1\r\n", "Bearer k1", false},
		{"the first of two", "authorization: Bearer k1\r\nAuthorization: Bearer k2\r\n", "Bearer k1", false},
		{"X-Forwarded-For", "x-forwarded-for: 203.0.113.9\r\n", "", true},
		{"Forwarded", "FORWARDED: for=203.0.113.9\r\n", "", true},
		{"X-Real-IP", "X-Real-IP: 203.0.113.9\r\n", "", true},
		{"an empty one forwards nothing", "X-Forwarded-For: \r\n", "", false},
		{"among others", "Cookie: a=b\r\nContent-Length: 0\r\nUser-Agent: curl\r\nAuthorization: Basic eA==\r\nX-Real-Ip: 10.0.0.1\r\n", "Basic eA==", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h fasthttp.RequestHeader
			raw := "POST /v1/counters/a/increment HTTP/1.1\r\nHost: localhost\r\n" + tt.headers + "\r\n"
			if err := h.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
				t.Fatal(err)
			}
			authorization, forwarded := authHeaders(&h)
			if string(authorization) != tt.authorization || forwarded != tt.forwarded {
				t.Fatalf("authHeaders = %q, %v; want %q, %v", authorization, forwarded, tt.authorization, tt.forwarded)
			}
		})
	}
}
