// Command catalog-prices refreshes the embedded catalog's On-Demand prices
// from an AWS Price List bulk offer file, and cross-checks the catalog's CPU
// features against the file's processorFeatures.
//
// Get the file (it needs no credentials), then run from the repository root:
//
//	curl -o index.json https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/me-central-1/index.json
//	go run ./scripts/catalog-prices -file index.json -region me-central-1
//
// Types the file lists get its price for the region (no longer an estimate);
// the others keep what they had. The run prints every change and every
// feature disagreement; review the diff of internal/catalog/data before
// committing it.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/mlplatform/mlplatform/internal/catalog"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "catalog-prices:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("catalog-prices", flag.ContinueOnError)
	file := fs.String("file", "", "AmazonEC2 bulk offer file for the region (index.json)")
	region := fs.String("region", "me-central-1", "region the file is for")
	data := fs.String("catalog", "internal/catalog/data/instance_types.json", "embedded catalog data file to update")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" {
		fs.Usage()
		return fmt.Errorf("-file is required")
	}
	f, err := os.Open(*file)
	if err != nil {
		return err
	}
	defer f.Close()
	pl, err := catalog.ParsePriceList(f, *region)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(*data)
	if err != nil {
		return err
	}
	updated, report, err := catalog.ApplyPriceList(old, pl)
	if err != nil {
		return err
	}
	for _, line := range report {
		fmt.Println(line)
	}
	if bytes.Equal(updated, old) {
		fmt.Println("no change")
		return nil
	}
	return os.WriteFile(*data, updated, 0o644)
}
