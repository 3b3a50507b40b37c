package main

import (
	"context"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/fleet"
)

func campaignArchiveCommand() *cli.Command {
	return &cli.Command{
		Name:      "archive",
		Usage:     "put away every job of an ended campaign: out of chunks status and the page, still reported",
		UsageText: "chunks campaign archive [--json] NAME",
		Description: "Every job of NAME must have ended (finished, or abandoned). They leave chunks status, the\n" +
			"status page and the metrics' counts; chunks campaign status, campaign report, report and\n" +
			"inspect still answer for them. Archiving it again changes nothing. With --json it prints\n" +
			"{\"name\", \"archived\"}." +
			campaignExample("chunks --schema lab drain spring-000001", "chunks --schema lab campaign archive spring"),
		Action: action(parseCampaign, runCampaignArchive),
	}
}

// runCampaignArchive archives the campaign's jobs.
func runCampaignArchive(ctx context.Context, d deps, o *campaignOptions, out io.Writer) error {
	return printResult(ctx, d, out, func(ctx context.Context, conn *pgx.Conn) (fleet.CampaignArchived, error) {
		return fleet.ArchiveCampaign(ctx, conn, o.Name)
	}, func(a fleet.CampaignArchived) {
		if a.Archived == 0 {
			say(out, "campaign %s was already archived; nothing changed", a.Name)
			return
		}
		say(out, "archived campaign %s: %s (chunks campaign report %[1]s still answers)", a.Name, plural(a.Archived, "job"))
	})
}
