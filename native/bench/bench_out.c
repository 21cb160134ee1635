/*
 * Output of the driver (rank 0 only): JSON lines for metadata (`{"type": ...}`) and compact CSV
 * lines for repetitions
 * (`R,job,variant,rep,warmup,valid,runtime_s,makespan_s,start_s,end_s`), flushed after
 * every chunk of repetitions so that a crash keeps what was measured. docs/measurement.md.
 */
#include "bench.h"

void ct_out_json_string(FILE *out, const char *text)
{
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(out, "\\u%04x", *c);
        else
            fputc(*c, out);
    }
    fputc('"', out);
}
