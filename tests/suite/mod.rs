mod e2e_exec;
mod e2e_interrupt;
mod e2e_mockllm;
mod layers;
mod support;
mod tui_tmux;
mod wire;
