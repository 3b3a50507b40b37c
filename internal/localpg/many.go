package localpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// StartMany starts one server for each of opts, all at once, for tests
// that need several (a router and its shards). initdb runs once, into a
// template, and each server starts from a copy of it: initdb is most of a
// server's start-up time, and on a small machine several at once only
// queue for its CPU. The servers are alike in everything but their port,
// folder and settings ([Options]); all of them share a BinDir. On failure,
// the servers already started are stopped.
func StartMany(ctx context.Context, opts ...Options) (servers []*Server, err error) {
	if len(opts) == 0 {
		return nil, nil
	}
	bin := opts[0].BinDir
	if bin == "" {
		if bin, err = FindBinDir(); err != nil {
			return nil, err
		}
	}
	for i := range opts {
		if opts[i].BinDir != "" && opts[i].BinDir != bin {
			return nil, fmt.Errorf("StartMany: every server needs the same BinDir, got %s and %s", bin, opts[i].BinDir)
		}
		opts[i].BinDir = bin
	}
	dir, err := os.MkdirTemp("", "chunks-pg-template-")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	tmpl := &Server{Dir: dir, cred: cred}
	if err := tmpl.chown(dir); err != nil {
		return nil, err
	}
	if err := initdb(ctx, bin, cred, tmpl.DataDir()); err != nil {
		return nil, err
	}
	servers = make([]*Server, len(opts))
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			servers[i], errs[i] = startCluster(ctx, o, filepath.Join(dir, "data"))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, s := range servers {
			if s != nil {
				err = errors.Join(err, s.Stop())
			}
		}
		return nil, err
	}
	return servers, nil
}
