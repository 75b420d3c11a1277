//! Plans: the backend-free geometry of every schedule, pure functions of shapes and
//! parameters: where a stencil's reads land ([`Layout`]), the out-of-core slabs, the
//! run-time model and `Auto`'s search, a rank's planes, hierarchical tiles and wavefront
//! pencils. Backends and the loop build on these; nothing here touches a device.

pub(crate) mod autotune;
pub(crate) mod fill;
pub(crate) mod lanes;
pub(crate) mod launch;
pub(crate) mod layout;
pub mod model;
pub(crate) mod pencils;
pub(crate) mod planes;
pub(crate) mod slabs;
pub(crate) mod stream;

pub(crate) use layout::Layout;
