// Package systemtest holds the tests of the whole service under load and
// under faults: twenty clients incrementing one counter and numbering two
// boards' tickets, MySQL killed or hung under load, Redis paused, frozen,
// killed and restarted, two processes sharing one database and one Redis,
// histories checked for linearizability. Each starts the service as
// internal/wire builds it (internal/apptest) on real servers
// (internal/testenv); app/ tests HTTP, and the packages below it test
// themselves. The tests of a domain service on MariaDB (tickets' numbering,
// webhooks' retry window on the real outbox) live here too, so that the
// domain packages' own tests need no server.
package systemtest
