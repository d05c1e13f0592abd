// Command etcd is the etcd v3.5 server, built from its Go module so that the
// integration tests need no downloaded release archive.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
