package main

import (
	"time"

	"github.com/spf13/cobra"
)

// irohInstallHint is how to get a build with serve, fetch and iroh://.
const irohInstallHint = "make iroh-lib, then go build -C cmd/sop-pme -tags iroh (make cli-iroh tests it)"

// errNoIroh is what serve, fetch and an iroh:// store return in a build
// without the iroh tag (store_iroh_off.go).
var errNoIroh = &cmdError{exitFailure, "this sop-pme was built without iroh (serve, fetch, iroh:// stores); build with: " + irohInstallHint, nil}

// irohHelp is what serve -h and fetch -h say of what a ticket gives away.
const irohHelp = `What a ticket gives: whoever holds it (and can reach the address in it) can
fetch every object the node serves, by storage_id, and nothing else. The
objects are ciphertext and a storage_id is not a secret from a ticket's
holder, but the objects' sizes and how many there are are visible to them
(as they are to anyone who can read the store). serve --allow ID|TABLE
serves only the objects named (a table's objects as the catalog lists them
at start and at each --rescan); a request for any other is refused. A reader still needs the DEKs (a keyring that holds
them, such as a grant gives: sop-pme keys grant) to decrypt anything.

A reader reaches the node only at the addresses the ticket names: the
address bound (--bind), and the relay if serve was given one (--relay).
A ticket that names a relay makes the reader's node use that relay, and
only it (fetch and iroh://TICKET take it from the ticket, no flag needed):
the relay's operator then learns the reader's IP address too. The relays a
blob ticket names (sendme's) are ignored: sendme names n0's public relays.

A relay is off unless serve --relay URL names one (only that one is used,
never n0's public relays): it lets a reader that cannot dial the node's
address reach it through the relay. Turning it on reveals to the relay's
operator the node's id and IP address, and the id and IP address of every
reader that connects through it, so who talks to whom, when and how much
(the volume). The relay sees only QUIC, encrypted end to end between the
two nodes, and the objects are ciphertext anyway. The node keeps a
connection to the relay open while it serves, and probes it (HTTPS) to
measure its latency.

Discovery is off unless serve --discovery URL names a pkarr relay (an
iroh-dns-server's http(s)://HOST[:PORT]/pkarr; only that one is used, never
n0's DNS servers): the node then publishes its endpoint id, the address it
bound and its relay, as a record signed with its key, there, at start,
whenever they change and every 5 minutes, so that a reader holding only
the endpoint id (64 hex digits, which serve prints) can reach it:
--store iroh://ID or fetch --from ID, with SOP_PME_IROH_DISCOVERY=URL set
to that pkarr relay (an id alone without it is a usage error, exit 2). A
whole ticket is never looked up. Turning discovery on reveals to the pkarr
relay's operator, and to anyone who asks it for the id, the node's IP
address and port and its relay, and that it is online (the record is
refreshed while it runs); a pkarr relay that resolves DNS as well (as
iroh-dns-server does) gives the same to DNS queries. A reader's lookup
reveals to that operator which node id it wants to reach, and the reader's
IP address. The record gives only addresses: the connection still
authenticates the node by its id (QUIC/TLS with its key), and every byte is
still verified against the storage_id; the operator can withhold a record
or hand out an old one, not forge one. Host names in the URLs are resolved
with the system's nameservers only. Discovery on the local network (mDNS)
is not offered: it would announce the node to every host on the LAN.`

// serveFlags are the flags of the serve command.
type serveFlags struct {
	store     storeFlag
	ks        keySource
	bind      string
	relay     string
	discovery string
	irohDir   string
	rescan    time.Duration
	allow     []string
}

// serveCmd is sop-pme serve: an iroh node serving the store's objects
// (store_iroh.go; errNoIroh without the iroh tag).
func (a *app) serveCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the store's objects to other nodes over iroh, verified range by range",
		Long: `Serve runs an iroh node that serves the objects of a directory store over the
iroh-blobs protocol, prints its ticket (an iroh endpoint ticket: the node's
id and addresses) on stdout, and runs until interrupted (Ctrl-C, SIGTERM).
Another node reads the objects with --store iroh://TICKET (export, verify,
check, schema, inspect, sql), or copies them with sop-pme fetch. A reader
asks only for the 16 KiB groups it needs and verifies each against the
storage_id as it arrives.

The node keeps its own iroh-blobs store (--iroh-dir; by default under the
user cache directory, one per store), into which it copies the store's
objects at start, each read verified from the store and checked against its
storage_id, and then every --rescan for the objects imported since. At
start and at each --rescan, an object removed from the store (sop-pme rm),
or no longer allowed by --allow, stops being served and its bytes are
deleted from the iroh directory (data and outboard files; the node keeps no
object bytes inline in its database): within one --rescan of its removal,
plus the time to list the store. With --rescan 0 that happens only at
start. The file system may keep deleted bytes in freed blocks. Serving
needs the disk space of the objects twice.

The node binds 127.0.0.1 and an ephemeral port unless --bind names an
address: over a network, the address other nodes dial (not 0.0.0.0), which
the ticket then carries. Anyone who can reach that address and holds the
ticket can fetch from it.

` + irohHelp,
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return a.runServe(cmd, &f)
		}),
	}
	addStoreFlag(cmd, &f.store)
	addKeyFlags(cmd, &f.ks)
	cmd.Flags().StringSliceVar(&f.allow, "allow", nil, "serve only these `storage_ids or tables` (repeatable, comma-separated; a table needs the keyring that holds its catalog)")
	cmd.Flags().StringVar(&f.bind, "bind", "", "`IP:PORT` to serve on, the address other nodes dial (default 127.0.0.1 and an ephemeral port)")
	cmd.Flags().StringVar(&f.relay, "relay", "", "`URL` of an iroh relay (iroh-relay) to serve through as well, named in the ticket (default: none; see below for what it reveals)")
	cmd.Flags().StringVar(&f.discovery, "discovery", "", "`URL` of a pkarr relay (iroh-dns-server's http(s)://HOST[:PORT]/pkarr) to publish the node's id and addresses to, so that readers can use the id alone (default: none; see below for what it reveals)")
	cmd.Flags().StringVar(&f.irohDir, "iroh-dir", "", "`directory` of the node's iroh-blobs store (default: under the user cache directory, one per store)")
	cmd.Flags().DurationVar(&f.rescan, "rescan", 10*time.Second, "how often to look for objects imported since and removed since (0: only at start)")
	return cmd
}

// fetchFlags are the flags of the fetch command.
type fetchFlags struct {
	store storeFlag
	from  string
	cache string
}

// fetchCmd is sop-pme fetch: copies objects from a serving node into the
// local store (store_iroh.go; errNoIroh without the iroh tag).
func (a *app) fetchCmd() *cobra.Command {
	var f fetchFlags
	cmd := &cobra.Command{
		Use:   "fetch ID... --from TICKET|ENDPOINT_ID",
		Short: "Copy objects from another node (sop-pme serve) into the store, verified",
		Long: `Fetch copies the objects named by storage_id (whole ones: another node's
objects cannot be listed, so a prefix is refused) from the node whose ticket
--from gives (what sop-pme serve printed; an iroh blob ticket, as sendme
prints, works too: its address is used, not its hash; or the node's
endpoint id alone, looked up at the pkarr relay SOP_PME_IROH_DISCOVERY
names, see below) into the store.

Every 16 KiB group is verified against the storage_id as it arrives and
kept in a cache (--cache; by default under the user cache directory), so a
fetch that is interrupted resumes where it stopped when run again. What
arrives is read back verified from the cache and staged in the store, and the
object is committed only once all of it arrived: a store never shows part of
an object. An object the store already
holds is not fetched again. The cache keeps what it fetched; remove the
directory to reclaim the space (only one sop-pme fetch can use a cache at a
time).

` + irohHelp,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("fetch takes one or more storage_ids (see %s -h)", cmd.CommandPath())
			}
			return nil
		},
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return a.runFetch(cmd, &f, args)
		}),
	}
	addStoreFlag(cmd, &f.store)
	cmd.Flags().StringVar(&f.from, "from", "", "`TICKET` of the node to fetch from (what sop-pme serve printed), or its endpoint id with SOP_PME_IROH_DISCOVERY set")
	cmd.Flags().StringVar(&f.cache, "cache", "", "`directory` of the fetch cache (default: under the user cache directory)")
	return cmd
}
