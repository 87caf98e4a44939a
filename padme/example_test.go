package padme_test

import (
	"fmt"

	"github.com/sovm/sop-pme/padme"
)

func ExampleTarget() {
	for _, l := range []uint64{1, 129, 1000, 1024, 65537, 1000000} {
		t, err := padme.Target(l)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%d -> %d (+%d)\n", l, t, t-l)
	}
	_, err := padme.Target(padme.MaxLength + 1)
	fmt.Println(err != nil)
	// Output:
	// 1 -> 1 (+0)
	// 129 -> 144 (+15)
	// 1000 -> 1024 (+24)
	// 1024 -> 1024 (+0)
	// 65537 -> 67584 (+2047)
	// 1000000 -> 1015808 (+15808)
	// true
}

func ExampleSolve() {
	// The writer encodes the object once with the empty pad entry
	// (padme.Pad{}) and measures its length L.
	const l = 1_000_000
	target, err := padme.Target(l)
	if err != nil {
		panic(err)
	}
	pad := padme.Solve(target - l)
	fmt.Printf("%q, %d zero bytes: +%d\n", pad.Key(), pad.ValueLen, pad.Growth())

	// Just above a step of the value's length prefix no value length fits,
	// and one key character makes up the difference.
	pad = padme.Solve(128)
	fmt.Printf("%q, %d zero bytes: +%d\n", pad.Key(), pad.ValueLen, pad.Growth())
	// Output:
	// "sovm:sop-pad-v1", 15807 zero bytes: +15808
	// "sovm:sop-pad-v1-", 127 zero bytes: +128
}
