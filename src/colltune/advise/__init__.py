"""`colltune advise`: one profiling run of an application, findings with predicted gains.

advise/pipeline.py runs the steps in order (profiling run, analysis, --measure, the files that
apply the advice, --verify, the advice recorded in the results database); docs/architecture.md
lists every module of the package with its concern, docs/advise.md what each finding rests on.
"""
