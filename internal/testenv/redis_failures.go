package testenv

// RedisFailures are the ways a Redis server fails that its clients must
// survive: gone (connections refused) and hung (nothing answers).
var RedisFailures = []struct {
	Name  string
	Break func(*Redis)
}{
	{"killed", (*Redis).Kill},
	{"frozen", (*Redis).Freeze},
}
