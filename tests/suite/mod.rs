mod e2e_exec;
mod e2e_interrupt;
mod e2e_mockllm;
mod layers;
mod policy_bypass;
mod policy_conformance;
mod support;
mod wire;
