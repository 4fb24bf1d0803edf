mod e2e_exec;
mod e2e_interrupt;
mod e2e_mockllm;
mod layers;
mod session_crash;
mod session_resume;
mod support;
mod wire;
