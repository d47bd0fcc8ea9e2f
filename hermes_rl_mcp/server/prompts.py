"""Prompts a client can offer its user: train on an environment, and write a new environment.

Both say only what the tools and the environment SDK really do, so a model that follows them
step by step gets a working run or a discoverable environment.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

TRAIN = """\
Train a policy with reinforcement learning through the hermes-rl tools{on_what}.{goal}

1. Call rl_list_environments and pick the environment that fits; read its source file if you \
need to know how it makes prompts and scores answers.
2. Call rl_select_environment with its name, then rl_get_current_config. Decide what to change \
(env.total_steps for the length of the run, env.group_size, trainer.learning_rate, run.backend) \
and set each with rl_edit_config. A refused edit says what is valid; nothing changes until an \
edit is accepted.
3. Call rl_start_training. It returns a run_id at once; the run trains in the background.
4. Poll rl_check_status(run_id) every 10 to 30 seconds and report the step and the latest \
eval/percent_correct and reward/mean as they change. If the run fails, read the reason it gives \
and rl_get_logs(run_id, component) for the failing component, then fix the config and start again.
5. When it has completed, call rl_get_results(run_id) and summarise: the final and best \
evaluation score, how the learning curve went, the checkpoints, and the wall time.
"""

WRITE = """\
Write a new RL environment for the hermes-rl server that teaches this task: {task}

An environment is one Python file with a class deriving from hermes_rl_mcp.sdk.BaseEnv (the \
same methods as Atropos's BaseEnv). Read the source of a bundled environment first: \
rl_list_environments gives each one's file (reverse_text is the shortest). The class needs:
- `name` (the name agents select it by) and a docstring whose first line describes the task;
- `env_config_cls`: a subclass of hermes_rl_mcp.sdk.BaseEnvConfig with the task's own fields \
(pydantic Field with bounds and a description each);
- `config_init()` (a classmethod) returning the config and a list of APIServerConfig, with \
group_size, batch_size, total_steps, steps_per_eval and max_token_length suited to the task;
- `setup()` building the training items and a held-out evaluation split that training never sees;
- `get_next_item()` returning the next training item;
- `collect_trajectories(item)`: ask the policy with `await self.policy.chat(messages, \
n=self.config.group_size, max_tokens=...)`, score every completion with a number in [0, 1] \
(partial credit where it makes sense), and return `(scored_group(group, scores), [])` \
(scored_group comes from hermes_rl_mcp.sdk.policy_client);
- `evaluate()` scoring the held-out split at temperature 0 and returning metrics such as \
eval/percent_correct, also passed to `self.wandb_log`;
- at the end of the file `if __name__ == "__main__": YourEnv.cli()`.
Never tokenize in the environment: the policy endpoint returns token ids and logprobs itself.

If the operator has enabled writing environments, call rl_create_environment(name, source): \
it keeps the file only when it compiles, is discovered, its config loads and a dry run of two \
groups against the untrained local policy scores them, and otherwise lists every problem with \
its line. Without it, save the file in one of the server's environment directories (the \
operator lists them in HERMES_RL_ENV_DIRS) and call rl_check_environment(name) for the same \
checks. Then select it, set env.total_steps to about 20, start a run and follow it with \
rl_check_status until it completes; read rl_get_logs(run_id, "env") if it fails.
"""


def register_prompts(server: MCPServer) -> None:
    @server.prompt(
        name="train_on_environment",
        title="Train on an RL environment",
        description="Walks through choosing an environment, configuring it, training, following the run and reading its results.",
    )
    def train_on_environment(
        environment: Annotated[str, Field(description="Environment name; empty to choose one from the list.")] = "",
        goal: Annotated[str, Field(description="What the training is for, in a sentence; may be empty.")] = "",
    ) -> str:
        on_what = f" on the environment {environment!r}" if environment.strip() else ""
        wanted = f" The goal: {goal.strip()}" if goal.strip() else ""
        return TRAIN.format(on_what=on_what, goal=wanted)

    @server.prompt(
        name="write_environment",
        title="Write a new RL environment",
        description="Explains how to write an environment file for a task, where to put it, and how to check it with a short run.",
    )
    def write_environment(
        task: Annotated[str, Field(description="The skill the environment should teach, and how answers are scored.")],
    ) -> str:
        return WRITE.format(task=task.strip())
