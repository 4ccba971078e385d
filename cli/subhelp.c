/* cli/subhelp.c - the help of each `datasets` and `jobs` subcommand (usage,
 * options, an example), printed by `privgen datasets create --help` and the
 * like; the groups' overviews stay in cmd_datasets.c and cmd_jobs.c. */
#include <stddef.h>

#include "cli/cli.h"

#define CONN                                                                                       \
    "  --json            print the server's JSON response\n"                                       \
    "  --url URL         server (default: PRIVGEN_URL or the `privgen login` one)\n"               \
    "  --token TOKEN     bearer token (default: PRIVGEN_TOKEN or the `privgen login` one)\n"

const pg_cli_subhelp pg_cli_datasets_subhelp[] = {
    {"create",
     "usage: privgen datasets create --name NAME --shape D|C,H,W --range LO:HI\n"
     "                               --model local|central|public [options]\n"
     "       privgen datasets create --schema SCHEMA.json --name NAME\n"
     "                               --model local|central|public [options]\n"
     "       privgen datasets create --spec FILE\n"
     "Declares a dataset (no rows yet: add them with `privgen datasets append`) and\n"
     "prints its id.\n"
     "  --name NAME           a label for people\n"
     "  --shape D|C,H,W       values per row: 2 for points, 1,28,28 for images\n"
     "  --range LO:HI         every value's declared range (samples are framed on it)\n"
     "  --model M             local (rows privatized before upload), central (raw rows,\n"
     "                        the service spends a budget), public (no privacy)\n"
     "  --num-classes K       rows carry a label in 0..K-1\n"
     "  local:   --declaration FILE  what `privgen privatize` printed, or\n"
     "           --mechanism laplace|gaussian --epsilon E [--delta D]\n"
     "           --sensitivity S --noise-scale B\n"
     "  central: --budget-epsilon E --budget-delta D   the dataset's cap\n"
     "  --schema FILE         a typed table (named columns: `privgen schema propose`\n"
     "                        drafts one); shape and classes follow from it, and rows\n"
     "                        are uploaded as CSV or JSON records (docs/tables.md)\n"
     "  --spec FILE           the JSON body of POST /v1/datasets instead of the flags\n" CONN
     "Example:\n"
     "  privgen datasets create --name arc --shape 2 --range -1.5:1.5 --model central \\\n"
     "      --budget-epsilon 3 --budget-delta 1e-5\n"
     "  privgen datasets create --schema schema.json --name people --model central \\\n"
     "      --budget-epsilon 3 --budget-delta 1e-5\n"},
    {"append", "usage: privgen datasets append ID FILE|- [options]\n"
               "Uploads rows (streamed; nothing is visible before the upload completes).\n"
               "  --format F        csv|npy|json|idx|raw (default: from FILE's extension)\n"
               "  --rows N          row count of raw float32 data read from a pipe\n"
               "  --declaration DECL.json   the privatization declaration sent with the rows;\n"
               "                    the server refuses (422) rows whose declaration differs from\n"
               "                    the dataset's. Default: FILE.decl.json when it exists (the\n"
               "                    sidecar `privgen privatize` writes)\n" CONN "Example:\n"
               "  privgen datasets append $DS noisy.npy\n"},
    {"list",
     "usage: privgen datasets list [--limit N] [--cursor C]\n"
     "Lists datasets, newest first, one line each.\n"
     "  --limit N         at most N per page\n"
     "  --cursor C        the page after the one that printed `--cursor C`\n" CONN "Example:\n"
     "  privgen datasets list --limit 20\n"},
    {"show", "usage: privgen datasets show ID\n"
             "Prints the dataset's shape, rows, privacy model and storage.\n" CONN "Example:\n"
             "  privgen datasets show $DS\n"},
    {"budget", "usage: privgen datasets budget ID\n"
               "Prints a central dataset's cap, what its jobs spent and the ledger entries.\n" CONN
               "Example:\n"
               "  privgen datasets budget $DS\n"},
    {"delete", "usage: privgen datasets delete ID\n"
               "Deletes the dataset. Refused (409) while a queued or running job reads it; its\n"
               "finished jobs keep serving samples and its ledger entries stay.\n" CONN "Example:\n"
               "  privgen datasets delete $DS\n"},
    {NULL, NULL},
};

#define SPEC_FLAGS                                                                                 \
    "  --spec FILE|-         the job spec as JSON (flags below override its fields)\n"             \
    "  --dataset ID          the dataset to train on\n"                                            \
    "  --method NAME         entropic_gan, dp_sinkhorn, swd_flow, swd_flow_r, swd_gen\n"           \
    "                        (their parameters and defaults: privgen methods NAME)\n"              \
    "  --steps N             train.steps\n"                                                        \
    "  --batch N             train.batch_size\n"                                                   \
    "  --seed S              seed of initialization and sampling (never of DP noise)\n"            \
    "  --checkpoint-every N  steps between checkpoints\n"                                          \
    "  --public-dataset ID   public data (latent flows)\n"                                         \
    "  --set key.path=VALUE  any spec field; VALUE is JSON when it parses (repeatable)\n"

const pg_cli_subhelp pg_cli_jobs_subhelp[] = {
    {"create",
     "usage: privgen jobs create --dataset ID --method NAME [options]\n"
     "       privgen jobs create --spec FILE [options]\n"
     "Submits a training job, charges its privacy plan to the dataset's budget and\n"
     "prints the job id.\n" SPEC_FLAGS CONN "Example:\n"
     "  privgen jobs create --dataset $DS --method dp_sinkhorn --set privacy.epsilon=1\n"},
    {"dry-run", "usage: privgen jobs dry-run --dataset ID --method NAME [options]\n"
                "Validates a job and prints its resolved spec and privacy plan without running it\n"
                "or charging anything.\n" SPEC_FLAGS CONN "Example:\n"
                "  privgen jobs dry-run --dataset $DS --method swd_flow --set privacy.epsilon=3\n"},
    {"list",
     "usage: privgen jobs list [--status S] [--dataset ID] [--limit N] [--cursor C]\n"
     "Lists jobs, newest first, one line each.\n"
     "  --status S        queued, running, succeeded, failed or cancelled\n"
     "  --dataset ID      only this dataset's jobs\n"
     "  --limit N         at most N per page\n"
     "  --cursor C        the page after the one that printed `--cursor C`\n" CONN "Example:\n"
     "  privgen jobs list --status running\n"},
    {"show",
     "usage: privgen jobs show ID\n"
     "Prints the job's status, progress, privacy spent, checkpoints and warnings\n"
     "(a trainer's own warnings name their code, e.g. \"warning (no_class_signal)\").\n" CONN
     "Example:\n"
     "  privgen jobs show $JOB\n"},
    {"cancel",
     "usage: privgen jobs cancel ID\n"
     "Requests cancellation and prints the job's new state (a queued job is refunded).\n" CONN
     "Example:\n"
     "  privgen jobs cancel $JOB\n"},
    {"delete", "usage: privgen jobs delete ID\n"
               "Deletes a finished job with its checkpoints and history. A queued job is\n"
               "cancelled and refunded first; a running one is refused (cancel it first). Its\n"
               "ledger entry stays: the dataset's budget is unchanged.\n" CONN "Example:\n"
               "  privgen jobs delete $JOB\n"},
    {"watch", "usage: privgen jobs watch ID\n"
              "Follows progress until the job ends; exits 1 unless it succeeded. A dropped\n"
              "stream (a restart, a proxy's timeout) is resumed after the last event received\n"
              "(Last-Event-ID); a server lost mid-watch is retried for 60 s. A trainer's\n"
              "warning is printed when it is recorded, and every warning again at the end.\n" CONN
              "Example:\n"
              "  privgen jobs watch $JOB\n"},
    {NULL, NULL},
};
