package config_test

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"countersvc/internal/config"
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

	d := reflect.ValueOf(config.Defaults())
	for i := range d.NumField() {
		f := d.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		if name == "" {
			continue
		}
		doc, ok := documented[name]
		if !ok {
			t.Errorf("%s is not in docs/configuration.md", name)
			continue
		}
		if !sameDefault(d.Field(i), doc) {
			t.Errorf("docs/configuration.md gives %s the default %s; it is %v", name, doc, d.Field(i))
		}
		delete(documented, name)
	}
	for name := range documented {
		t.Errorf("docs/configuration.md lists %s, which the service does not read", name)
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
