//! How values cross the binding: configs come in as Python dicts deserialised straight into the core's serde
//! structs (unknown keys refused), results go out as Python objects built from the core's serde output. No JSON
//! text on either side, so a key misspelled in Python fails here with the struct's name and its expected keys.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde::de::{DeserializeOwned, Visitor};
use serde::{forward_to_deserialize_any, Deserializer};

/// A Python value (dict, list, str, int…) as the core struct `T`; `what` names it in the error.
pub(crate) fn from_py<T: DeserializeOwned>(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<T> {
    pythonize::depythonize(obj).map_err(|e| PyValueError::new_err(format!("bad {what}: {e}")))
}

/// A core result as Python objects (structs become dicts, sequences lists).
pub(crate) fn to_py<T: serde::Serialize>(py: Python<'_>, value: &T) -> PyResult<Py<PyAny>> {
    pythonize::pythonize(py, value)
        .map(|b| b.unbind())
        .map_err(|e| PyValueError::new_err(format!("cannot convert result: {e}")))
}

/// The field names serde accepts for struct `T`: its derive hands them to `deserialize_struct`, where this
/// deserializer records them and stops.
fn struct_fields<T: DeserializeOwned>() -> Vec<&'static str> {
    struct Probe<'a>(&'a mut &'static [&'static str]);
    impl<'de> Deserializer<'de> for Probe<'_> {
        type Error = serde::de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(serde::de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(serde::de::Error::custom("probed"))
        }
        forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut fields));
    fields.to_vec()
}

/// The keys each config struct accepts, by the name the Python side types it under (pgsurgeon/boundary.py), so
/// a test can hold the two sides to one schema.
#[pyfunction]
pub fn config_fields(name: &str) -> PyResult<Vec<&'static str>> {
    use pgsurgeon_core as c;
    Ok(match name {
        "ScannerConfig" => struct_fields::<crate::ScannerConfig>(),
        "ScanOptions" => struct_fields::<c::checks::scan::ScanOptions>(),
        "RelMeta" => struct_fields::<c::checks::scan::RelMeta>(),
        "ClassifyConfig" => struct_fields::<c::rows::classify::ClassifyConfig>(),
        "CarveConfig" => struct_fields::<c::rows::carve::CarveConfig>(),
        "ColumnOut" => struct_fields::<c::rows::carve::ColumnOut>(),
        "ChunkRef" => struct_fields::<c::rows::carve::ChunkRef>(),
        "SegFile" => struct_fields::<c::sources::blocks::SegFile>(),
        "Horizons" => struct_fields::<c::visibility::transam::Horizons>(),
        "RelDesc" => struct_fields::<c::format::tuple::RelDesc>(),
        "AttrDesc" => struct_fields::<c::format::tuple::AttrDesc>(),
        "TypeDesc" => struct_fields::<c::datum::TypeDesc>(),
        "FieldDesc" => struct_fields::<c::datum::FieldDesc>(),
        "IndexEvidenceConfig" => struct_fields::<c::rows::evidence::IndexEvidenceConfig>(),
        "LossConfig" => struct_fields::<c::rows::loss::LossConfig>(),
        "IndexFiles" => struct_fields::<c::rows::evidence::IndexFiles>(),
        "AllIndexedConfig" => struct_fields::<c::checks::diagnose::allindexed::AllIndexedConfig>(),
        "RelFiles" => struct_fields::<c::checks::diagnose::allindexed::RelFiles>(),
        "ClusterOptions" => struct_fields::<c::catalog::ClusterOptions>(),
        "AttrLayout" => struct_fields::<c::inject::AttrLayout>(),
        "DamageSpec" => struct_fields::<c::inject::DamageSpec>(),
        _ => return Err(PyValueError::new_err(format!("no config struct named {name}"))),
    })
}
