package app

import (
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// trustedProxies are the proxies whose X-Forwarded-For is believed
// (COUNTERS_TRUSTED_PROXIES, parsed by config).
type trustedProxies []netip.Prefix

func (t trustedProxies) contains(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range t {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientAddr is the address of the client that made the request. Behind
// trusted proxies it walks X-Forwarded-For from the right, the end the
// proxies append to, and stops at the first address that is not a trusted
// proxy. Fiber's own ProxyHeader takes the leftmost entry instead, which the
// client writes itself: with it anyone could dodge the rate limit by
// sending a new made-up address each time.
func (t trustedProxies) clientAddr(c *fiber.Ctx) netip.Addr {
	addr, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	addr = addr.Unmap()
	if len(t) == 0 || !t.contains(addr) {
		return addr
	}
	// From the right, entry by entry, without splitting the header into a
	// slice first: this runs on every request behind a proxy.
	hops := c.Get(fiber.HeaderXForwardedFor)
	if hops == "" {
		// No chain: the proxy is the client (parseHop would say so after
		// two failed parses, each allocating its error, on every request).
		return addr
	}
	for {
		comma := strings.LastIndexByte(hops, ',')
		hop, ok := parseHop(hops[comma+1:])
		if !ok {
			// Garbage in the chain: everything left of it is unreliable,
			// so the last proxy that wrote it is the client we know.
			return addr
		}
		addr = hop
		if !t.contains(addr) || comma < 0 {
			return addr
		}
		hops = hops[:comma]
	}
}

// local reports whether the client is on this machine: its address is
// loopback, and the request did not pass through a proxy that is not
// trusted. A reverse proxy on this machine that COUNTERS_TRUSTED_PROXIES
// does not name would otherwise make every client of it look local, and
// open the private API of a service without an API token to the world.
// forwarded says whether the request has a forwarding header
// (authHeaders).
func (t trustedProxies) local(c *fiber.Ctx, forwarded bool) bool {
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	if t.contains(peer) {
		return t.clientAddr(c).IsLoopback() // its forwarding headers are believed
	}
	return !forwarded && peer.Unmap().IsLoopback()
}

// parseHop reads one X-Forwarded-For entry; some proxies add a port.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// prefixStrings gives the ranges in the form Fiber's Config.TrustedProxies
// takes.
func prefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}
