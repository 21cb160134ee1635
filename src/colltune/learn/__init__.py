"""`colltune learn`: selection tables from traces (IOTA, docs/learn.md, docs/select.md).

draw      the runtime's draw (splitmix64, caps, explore/exploit pick), bit-exact with the C side
table     selection tables: model, reader (the C grammar), writer, cell lookup
traces    rank-N.cttrace files -> trace_runs / trace_calls
models    per (collective, member) runtime regressors (lightgbm, Tweedie)
selection models -> next selection table
simulate  an application whose member runtimes come from a ground truth (seed 5.4.7)
loop      run -> ingest -> train -> table, batch after batch
"""
