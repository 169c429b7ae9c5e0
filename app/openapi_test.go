package app_test

import (
	"bufio"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/countersvc/countersvc/internal/apptest"
)

var (
	openapiPath   = regexp.MustCompile(`^  (/\S*):\s*$`)
	openapiMethod = regexp.MustCompile(`^    (get|put|post|delete|patch):\s*$`)
	fiberParam    = regexp.MustCompile(`:(\w+)`)
)

// Every route the service serves is in openapi.yaml, and every operation
// openapi.yaml documents is served: the reference stays in step with the code.
func TestOpenAPIDocumentsExactlyTheServedRoutes(t *testing.T) {
	t.Parallel()
	f, err := os.Open("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	documented := map[string]bool{}
	path := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := openapiPath.FindStringSubmatch(sc.Text()); m != nil {
			path = m[1]
		} else if m := openapiMethod.FindStringSubmatch(sc.Text()); m != nil && path != "" {
			documented[strings.ToUpper(m[1])+" "+path] = true
		} else if sc.Text() != "" && !strings.HasPrefix(sc.Text(), " ") {
			path = ""
		}
	}
	e := apptest.New(t)
	served := map[string]bool{}
	for _, r := range e.App.GetRoutes(true) {
		if r.Method == "HEAD" || r.Method == "OPTIONS" || r.Path == "/" || strings.Contains(r.Path, "*") {
			continue
		}
		served[r.Method+" "+fiberParam.ReplaceAllString(r.Path, "{$1}")] = true
	}
	var missing, extra []string
	for k := range served {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !served[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("served but not in openapi.yaml: %v\nin openapi.yaml but not served: %v", missing, extra)
	}
}

// Every route the service serves declares what it needs of its caller:
// public, or private with an access (app/access.go), which the router
// checks before the handler. A route added without one fails here by name
// (and router.private refuses to add a private route without one).
func TestEveryRouteDeclaresItsAccess(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	ops := map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}
	for _, r := range e.App.GetRoutes(true) {
		if ops[r.Path] || strings.HasPrefix(r.Path, "/dashboard") {
			continue // the service's own pages: public, outside the API
		}
		if !strings.HasPrefix(r.Name, "public") && !strings.HasPrefix(r.Name, "private: ") {
			t.Errorf("%s %s declares no access (route name %q)", r.Method, r.Path, r.Name)
		}
		if strings.HasPrefix(r.Path, "/v1/") && r.Name == "" {
			t.Errorf("%s %s is served without a declared access", r.Method, r.Path)
		}
	}
}
