//! Agents that are not model providers but speak the `ChatModel` trait:
//! the replay of a recorded run ([`ReplayModel`], reads the release's
//! trajectories) and the deterministic baseline research policy
//! ([`BaselineModel`]). They live beside the controller so that
//! `earthverse-model-provider` depends on no release crate.

pub mod baseline;
pub mod replay;

pub use baseline::BaselineModel;
pub use replay::ReplayModel;
