package wire

// The configuration: Config is one block per component, the core's in
// components.go and each capability's beside its build (live.go,
// webhooks.go, hits.go): Build hands each component its own settings, and
// each block checks its own values. The variables' names are public
// (docs/configuration.md), so every field carries its full name, not a
// prefix that a nesting would add.

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/caarlos0/env/v10"
)

// Config is every setting of the service. Its defaults are Defaults().
type Config struct {
	HTTP       HTTP       // package app, and main.go's listener and shutdown
	MySQL      MySQL      // package storage
	Cache      Cache      // package cache (Redis)
	Coalesce   Coalesce   // package coalesce
	Keys       Keys       // package keys
	History    History    // package history: its retention
	Breakdowns Breakdowns // package breakdowns, and the store's labels
	Live       Live       // package live, and app's streams
	Visitors   Visitors   // package visitors
	Hits       Hits       // package hits, and the cache's hit limits
	Webhooks   Webhooks   // package webhooks
	Log        Log        // main.go's logger
}

// Load reads the environment and validates the result. The error is one line
// that names the variable at fault.
func Load() (Config, error) {
	c := Defaults()
	for old, name := range renamed {
		if _, set := os.LookupEnv(old); set {
			return c, fmt.Errorf("%s: renamed %s; set that instead", old, name)
		}
	}
	// One component at a time: env's errors name the Go field alone, and
	// two components may have fields of one name (MySQL.Timeout and
	// Cache.Timeout are two variables). TestAnyVariableThatDoesNotParseIsNamedFirst
	// holds every variable to its name.
	var errs []string
	for _, p := range c.components() {
		if err := env.Parse(p); err != nil {
			errs = append(errs, oneLine(err, reflect.TypeOf(p).Elem()))
		}
	}
	if len(errs) > 0 {
		return c, errors.New(strings.Join(errs, "; "))
	}
	return c, c.Validate()
}

// renamed are settings whose name changed, so that one word names one
// concept: an old name still set is refused rather than silently ignored.
var renamed = map[string]string{
	"COUNTERS_LIST_CACHE_TTL":     "COUNTERS_LIST_TTL",
	"COUNTERS_COALESCE_MAX_BATCH": "COUNTERS_COALESCE_MAX_ROUND",
	// An entry's lifetime became a lease: the longest a write waits when
	// Redis cannot confirm its invalidation. A 60s TTL kept as a lease would
	// make such writes wait a minute.
	"COUNTERS_CACHE_TTL": "COUNTERS_CACHE_LEASE",
}

// Validate checks values that parse but make no sense: each component's
// own, then those that bind two components.
func (c Config) Validate() error {
	for _, p := range c.components() {
		if v, ok := p.(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				return err
			}
		}
	}
	if c.Coalesce.MaxInFlight > c.MySQL.MaxOpenConns {
		return errors.New("COUNTERS_COALESCE_MAX_INFLIGHT: must not exceed COUNTERS_MYSQL_MAX_CONNS")
	}
	return nil
}

// components are pointers to c's fields, one a component, in their order:
// Load parses and Validate checks each one, so that a component added to
// Config needs no line here.
func (c *Config) components() []any {
	v := reflect.ValueOf(c).Elem()
	out := make([]any, v.NumField())
	for i := range out {
		out[i] = v.Field(i).Addr().Interface()
	}
	return out
}

// oneLine rewrites env's errors to name the variable, not the Go field of
// component (a struct type): "COUNTERS_MYSQL_TIMEOUT: time: invalid duration "soon"".
func oneLine(err error, component reflect.Type) string {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	var parts []string
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			parts = append(parts, fmt.Sprintf("%s: %v", envName(component, pe.Name), pe.Err))
		} else {
			parts = append(parts, e.Error())
		}
	}
	return strings.ReplaceAll(strings.Join(parts, "; "), "\n", "; ")
}

// envName is the variable of the field named field in component or in a
// struct nested in it (such as Hits.Limits).
func envName(component reflect.Type, field string) string {
	for i := range component.NumField() {
		f := component.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("env"), ","); name != "" {
			if f.Name == field {
				return name
			}
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			if name := envName(f.Type, field); name != field {
				return name
			}
		}
	}
	return field
}
