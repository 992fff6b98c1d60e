//! Kriging (WIP)
#[cfg(test)]
mod tests;
