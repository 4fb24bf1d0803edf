mod e2e_exec;
mod e2e_interrupt;
mod e2e_mockllm;
mod layers;
mod support;
mod tools_cli;
mod wire;
