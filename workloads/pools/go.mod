module github.com/benchharness/pools

go 1.26

require github.com/jackc/puddle/v2 v2.2.3

require golang.org/x/sync v0.1.0 // indirect
