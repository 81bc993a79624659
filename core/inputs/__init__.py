"""Everything checked before a model loads: settings from YAML and the command line (`config`), the recipes' shared
arguments (`arguments`), data and its checks (`data`), prompts built from rows (`prompts`), the rewards a run asked
for (`rewards`), the engine a launch asked for (`distributed`), and the base model and tokenizer (`models`)."""
