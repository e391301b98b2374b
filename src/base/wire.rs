//! Enums whose variants each have one name on the wire (JSON, records, human output): serde's
//! names, `as_str`, `Display` and `ALL` all come from the one list [`wire_enum!`] is given, so
//! no name is written twice.

/// Declares an enum whose variants are named `Variant = "wire_name"`. The enum's own
/// attributes must derive `serde::Serialize` (and `Deserialize` where it is read); the macro
/// adds each variant's `#[serde(rename)]`, `ALL` (every variant, in order), `as_str` and
/// `Display`.
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $( $(#[$vmeta])* #[serde(rename = $text)] $variant, )+
        }

        impl $name {
            /// Every variant, in the order declared.
            pub const ALL: [$name; [$(stringify!($variant)),+].len()] = [$($name::$variant),+];

            /// The name JSON, records and human output use.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub(crate) use wire_enum;
