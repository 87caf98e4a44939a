//go:build !iroh

package main

import (
	"context"

	"github.com/spf13/cobra"
)

// irohBuilt says whether this build has serve, fetch and iroh:// stores:
// this one, built without the iroh tag, links no Rust library.
const irohBuilt = false

func openIrohStore(context.Context, string) (store, error) { return nil, errNoIroh }

func (a *app) runServe(*cobra.Command, *serveFlags) error { return errNoIroh }

func (a *app) runFetch(*cobra.Command, *fetchFlags, []string) error { return errNoIroh }
