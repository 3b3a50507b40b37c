package router_test

import (
	"context"
	"fmt"
	"log"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/router"
)

// Make a database the router of two shards, each of which has chunks
// installed in schema lab (chunks migrate --schema lab), then ask it where a
// tenant's orders, jobs and audit live. It needs a superuser and the
// plproxy extension on the router's server.
func ExampleInstall() {
	ctx := context.Background()
	routerDSN, shards := exampleDSNs(2) // yours: "postgres://admin@router/shop?search_path=lab", and the shards'
	conn, err := pgx.Connect(ctx, routerDSN)
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := conn.Close(ctx); err != nil {
			log.Print(err)
		}
	}()
	if err := router.Install(ctx, conn, router.Config{Schema: "lab", Shards: shards}); err != nil {
		log.Fatal(err) // a shard that does not answer, or has no chunks in lab, is named
	}

	list, err := router.Shards(ctx, conn)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range list {
		fmt.Println(s.Name) // s.Conninfo is the shard's connection string, without its password
	}
	shard, err := router.ShardOf(ctx, conn, "alien-desert")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("alien-desert is on", shard)
	// Output:
	// p0
	// p1
	// alien-desert is on p1
}

// The PL/Proxy cluster of the router in schema lab: the foreign server that
// router.Install creates, and that dropping the router drops
// (drop schema lab cascade; drop server chunks_lab cascade).
func ExampleCluster() {
	fmt.Println(router.Cluster("lab"))
	// Output: chunks_lab
}
