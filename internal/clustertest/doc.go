// Package clustertest runs the service, several processes of it, on
// clusters of real servers: a three-node MariaDB Galera cluster with one
// service per node, and Redis Sentinel failing over under load. Its tests
// take minutes and several servers' memory, so they run only with
// scripts/test --cluster (see testenv.NeedCluster). It has no code of its
// own outside its tests.
package clustertest
