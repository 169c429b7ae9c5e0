module github.com/countersvc/countersvc/client

go 1.24
