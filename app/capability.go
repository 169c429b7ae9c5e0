package app

// A Capability is a feature's HTTP side: its routes, each with the access
// it needs (access.go). The service's wiring (internal/wire) hands app.New
// one per feature it built, and New adds their routes; a new feature adds
// a file here with its handlers and a constructor such as Webhooks, and
// changes nothing else in app/.
type Capability interface {
	routes(r router)
}

// capabilityFunc is a Capability made of its routes function.
type capabilityFunc func(r router)

func (f capabilityFunc) routes(r router) { f(r) }
