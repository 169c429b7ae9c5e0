package app

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// entityTag is a strong ETag for body: a hash of exactly the bytes sent,
// so two answers share a tag only when they are byte for byte the same.
func entityTag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
}

// sendTagged sends body with its ETag, or 304 Not Modified without a body
// when the client's If-None-Match already names the tag. The caller has set
// the Content-Type and Cache-Control, which a 304 repeats.
func sendTagged(c *fiber.Ctx, body []byte, tag string) error {
	c.Set(fiber.HeaderETag, tag)
	if noneMatchNames(c.Get(fiber.HeaderIfNoneMatch), tag) {
		c.Status(fiber.StatusNotModified)
		return nil
	}
	return c.Send(body)
}

// noneMatchNames reports whether an If-None-Match header names tag. The
// comparison is weak (RFC 9110 13.1.2): W/"x" names "x" too; "*" names any.
func noneMatchNames(header, tag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == tag {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether Accept-Encoding allows gzip: named (or "*")
// and not refused with q=0.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(part, ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "x-gzip" && coding != "*" {
			continue
		}
		if q, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if v, err := strconv.ParseFloat(q, 64); err == nil && v == 0 {
				return false
			}
		}
		return true
	}
	return false
}

// gzipped compresses b at build time; it panics only if the in-memory
// writer fails, which it does not.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := w.Write(b); err != nil {
		panic(err)
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}
