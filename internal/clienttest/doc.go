// Package clienttest holds the tests of the Go client (module
// github.com/countersvc/countersvc/client) that need the service: its
// calls against a real service on MariaDB, its examples (kept in
// client/example_test.go, where its documentation shows them), retries through
// a proxy that drops answers, live updates and webhooks. They live in the
// service's module, not the client's: `go mod tidy` in an application
// takes in the imports of its dependencies' tests too, and these import
// the service, which an application that requires the client must not
// get (client/module_test.go). The client's own tests need nothing but
// the standard library.
package clienttest
