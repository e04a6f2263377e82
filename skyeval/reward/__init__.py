"""Rewards for RL trainers from skyeval's graders: `trl(env)` for TRL's GRPOTrainer,
`verl.compute_score` for verl, `serve` (the `serve-reward` command) for OpenRLHF-style
remote rewards, and `Reward` for anything else (docs/rl.md)."""

from skyeval.reward import verl
from skyeval.reward.components import RewardConfig
from skyeval.reward.scoring import Reward
from skyeval.reward.server import ServeConfig, serve
from skyeval.reward.trl import trl

__all__ = ["Reward", "RewardConfig", "ServeConfig", "serve", "trl", "verl"]
