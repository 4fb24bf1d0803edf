mod e2e_exec;
mod layers;
mod support;
mod wire;
