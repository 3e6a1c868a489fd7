//! leanctx's entries in a host's JSON hook config, in the shape the host
//! uses ([`Shape`]): the one place that picks [`cursor`] or [`nested`].

use super::edit::{Changes, Found, ShapeError};
use super::jsonfile::Node;
use super::spec::{Shape, Spec};
use super::{cursor, nested};
use crate::base::host::Host;
use crate::hosts::profile::profile;
use serde_json::Value;

/// Add or update our entries.
pub fn upsert(doc: &mut Node, spec: &Spec) -> Result<Changes, ShapeError> {
    match profile(spec.host).shape {
        Shape::Flat => cursor::upsert(doc, spec),
        Shape::Nested => nested::upsert(doc, spec),
    }
}

/// Remove exactly our entries (and what that emptied).
pub fn remove(host: Host, doc: &mut Node, before: &super::edit::Before) -> Result<Changes, ShapeError> {
    match profile(host).shape {
        Shape::Flat => cursor::remove(doc, before),
        Shape::Nested => nested::remove(doc, host, before),
    }
}

/// Our entries in `doc`.
pub fn find(host: Host, doc: &Value) -> Vec<Found> {
    match profile(host).shape {
        Shape::Flat => cursor::find(doc),
        Shape::Nested => nested::find(doc, host),
    }
}

/// What is left of a file leanctx created once our entries are removed.
pub fn skeleton(host: Host) -> Value {
    match profile(host).shape {
        Shape::Flat => serde_json::json!({"version": 1}),
        Shape::Nested => serde_json::json!({}),
    }
}
