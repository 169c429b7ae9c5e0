package config_test

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/config"
)

// Every variable is in the configuration guide's table, with the default
// the service really has: the guide is where operators look, and a default
// changed in a package must not leave it behind.
func TestTheGuideListsEveryVariableWithItsDefault(t *testing.T) {
	guide, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{} // variable -> its default column
	for _, line := range strings.Split(string(guide), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`COUNTERS_") {
			continue
		}
		documented[strings.Trim(strings.TrimSpace(cells[1]), "`")] = strings.TrimSpace(cells[2])
	}

	eachVariable(reflect.ValueOf(config.Defaults()), func(name string, v reflect.Value) {
		doc, ok := documented[name]
		if !ok {
			t.Errorf("%s is not in docs/configuration.md", name)
			return
		}
		if !sameDefault(v, doc) {
			t.Errorf("docs/configuration.md gives %s the default %s; it is %v", name, doc, v)
		}
		delete(documented, name)
	})
	for name := range documented {
		t.Errorf("docs/configuration.md lists %s, which the service does not read", name)
	}
}

// eachVariable calls f with every variable's name and value in the struct
// v, and in the structs nested in it (the components, and theirs).
func eachVariable(v reflect.Value, f func(name string, v reflect.Value)) {
	for i := range v.NumField() {
		field := v.Type().Field(i)
		if name, _, _ := strings.Cut(field.Tag.Get("env"), ","); name != "" {
			f(name, v.Field(i))
		} else if field.Type.Kind() == reflect.Struct {
			eachVariable(v.Field(i), f)
		}
	}
}

// sameDefault reports whether the guide's default column says v: a value
// in backticks, or "(empty)" or "(none)" for an empty one.
func sameDefault(v reflect.Value, doc string) bool {
	if doc == "(empty)" || doc == "(none)" {
		return v.IsZero() || (v.Kind() == reflect.Slice && v.Len() == 0)
	}
	text, ok := strings.CutPrefix(doc, "`")
	if text, ok = strings.CutSuffix(text, "`"); !ok {
		return false
	}
	switch x := v.Interface().(type) {
	case time.Duration:
		d, err := time.ParseDuration(text)
		return err == nil && d == x
	case int:
		n, err := strconv.Atoi(text)
		return err == nil && n == x
	case bool:
		b, err := strconv.ParseBool(text)
		return err == nil && b == x
	case string:
		return text == x
	case []string:
		return text == strings.Join(x, ",")
	}
	return false
}
