"""Everything checked before a model loads. Public: `config.parse_config` (the parsed dataclasses and their `Sources`),
the recipes' shared `arguments` (`DataArguments`, `PromptArguments`, `RewardArguments`, `RewardWeightArguments`,
`RunArguments`), `prompts.prepare_prompts` (the one data step: load, check, cut, template, fit),
`data.load_data` / `load_preference_pairs` / `cut_heldout`, `rewards.resolve_rewards` -> `Rewards`,
`models.load_model` / `load_tokenizer` / `check_model`, `distributed` (the engine a launch asked for)."""
