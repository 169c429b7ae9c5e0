package config

import "github.com/caarlos0/env/v10"

// Defaults is the configuration of an empty environment: what the service
// runs with when nothing is set. Tests start from it.
func Defaults() Config {
	var c Config
	if err := env.ParseWithOptions(&c, env.Options{Environment: map[string]string{}}); err != nil {
		panic("config: the defaults do not parse: " + err.Error())
	}
	return c
}
