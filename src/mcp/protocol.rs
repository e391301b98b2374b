//! JSON-RPC 2.0 as the Model Context Protocol uses it on stdio: one message a line, each a
//! request (with an `id`), a notification (without) or a response; and the protocol revisions
//! this server speaks.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::base::wire::wire_enum;

/// A JSON-RPC error code: what was wrong with a message itself, never an a3s-iso failure
/// (those are tool results carrying the error document).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RpcCode {
    /// The line is not JSON.
    ParseError,
    /// The JSON is not a JSON-RPC request or notification.
    InvalidRequest,
    /// No such method.
    MethodNotFound,
    /// The method's parameters (a tool's arguments included) are not what it takes.
    InvalidParams,
}

impl RpcCode {
    /// The number JSON-RPC gives the code.
    pub fn number(self) -> i64 {
        match self {
            RpcCode::ParseError => -32700,
            RpcCode::InvalidRequest => -32600,
            RpcCode::MethodNotFound => -32601,
            RpcCode::InvalidParams => -32602,
        }
    }
}

/// A JSON-RPC error response's `error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    /// Which kind of misuse.
    pub code: RpcCode,
    /// What was wrong, for a person.
    pub message: String,
    /// What a program can act on (`{"code": "not_granted", "grant": "--allow-…"}`).
    pub data: Option<Value>,
}

impl RpcError {
    /// An error of `code` saying `message`.
    pub fn new(code: RpcCode, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error carrying `data`.
    pub fn with_data(self, data: Value) -> RpcError {
        RpcError {
            data: Some(data),
            ..self
        }
    }

    /// Invalid parameters.
    pub fn params(message: impl Into<String>) -> RpcError {
        RpcError::new(RpcCode::InvalidParams, message)
    }
}

wire_enum! {
    /// The revisions of the Model Context Protocol this server speaks, oldest first, each
    /// named as `initialize` names it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
    pub enum ProtocolVersion {
        /// The first published revision.
        V2024_11_05 = "2024-11-05",
        /// Tool annotations.
        V2025_03_26 = "2025-03-26",
        /// Structured tool results (`structuredContent`); no batches.
        V2025_06_18 = "2025-06-18",
    }
}

impl ProtocolVersion {
    /// The newest revision spoken: the answer to a client that asks for one not spoken.
    pub const LATEST: ProtocolVersion = ProtocolVersion::V2025_06_18;

    /// The revision to use with a client that asked for `requested`: that one when it is
    /// spoken, else the newest (the client then decides whether it can go on).
    pub fn negotiate(requested: Option<&str>) -> ProtocolVersion {
        ProtocolVersion::ALL
            .into_iter()
            .find(|v| Some(v.as_str()) == requested)
            .unwrap_or(ProtocolVersion::LATEST)
    }

    /// Whether tool results carry `structuredContent` beside their text.
    pub fn structured_content(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }
}

wire_enum! {
    /// The methods this server answers (every notification is taken and ignored), each named
    /// as a request names it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum Method {
        /// The handshake: the protocol revision, the server's capabilities.
        Initialize = "initialize",
        /// Liveness.
        Ping = "ping",
        /// The tools offered.
        ToolsList = "tools/list",
        /// A tool's call.
        ToolsCall = "tools/call",
    }
}

impl Method {
    /// The method of that name.
    pub fn named(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.as_str() == name)
    }
}

/// One message from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request: it gets exactly one response with its `id`.
    Request {
        /// The request's id, echoed in the response.
        id: Value,
        /// The method asked for.
        method: String,
        /// Its parameters (an empty object when none were given).
        params: Map<String, Value>,
    },
    /// A notification: it gets no response.
    Notification {
        /// The method named.
        method: String,
    },
    /// A response to a request of the server's (it sends none, so this is dropped).
    Response,
}

/// What a JSON value read from the client is; a message that is none of them is an invalid
/// request, answered with the id it had when that id was readable.
pub fn classify(value: Value) -> Result<Incoming, (Value, RpcError)> {
    let invalid = |id: Value, why: &str| Err((id, RpcError::new(RpcCode::InvalidRequest, why)));
    let Value::Object(mut message) = value else {
        return invalid(Value::Null, "a message is a JSON object");
    };
    let id = message.remove("id");
    if let Some(id) = &id
        && !(id.is_string() || id.is_i64() || id.is_u64())
    {
        return invalid(Value::Null, "an id is a string or an integer");
    }
    let answer_to = id.clone().unwrap_or(Value::Null);
    if message.get("jsonrpc") != Some(&json!("2.0")) {
        return invalid(answer_to, "\"jsonrpc\" must be \"2.0\"");
    }
    let method = match message.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => return invalid(answer_to, "\"method\" is a string"),
        None if id.is_some()
            && (message.contains_key("result") || message.contains_key("error")) =>
        {
            return Ok(Incoming::Response);
        }
        None => return invalid(answer_to, "a request names its \"method\""),
    };
    let params = match message.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => return invalid(answer_to, "\"params\" is an object"),
    };
    Ok(match id {
        Some(id) => Incoming::Request { id, method, params },
        None => Incoming::Notification { method },
    })
}

/// A success response.
pub fn success(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// An error response.
pub fn failure(id: &Value, error: &RpcError) -> Value {
    let mut body = json!({ "code": error.code.number(), "message": error.message });
    if let Some(data) = &error.data {
        body["data"] = data.clone();
    }
    json!({ "jsonrpc": "2.0", "id": id, "error": body })
}

#[cfg(test)]
mod tests {
    use crate::mcp::protocol::*;

    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        let request = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
        assert_eq!(
            classify(request),
            Ok(Incoming::Request {
                id: json!(7),
                method: "ping".into(),
                params: Map::new()
            })
        );
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(
            classify(note),
            Ok(Incoming::Notification {
                method: "notifications/initialized".into()
            })
        );
        let response = json!({"jsonrpc": "2.0", "id": "a", "result": {}});
        assert_eq!(classify(response), Ok(Incoming::Response));
    }

    #[test]
    fn malformed_messages_are_invalid_requests_with_the_id_when_readable() {
        let code = |v: Value| classify(v).map_err(|(id, e)| (id, e.code)).err();
        let invalid = RpcCode::InvalidRequest;
        assert_eq!(code(json!([1])), Some((Value::Null, invalid)));
        assert_eq!(
            code(json!({"id": 1, "method": "ping"})),
            Some((json!(1), invalid))
        );
        assert_eq!(
            code(json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"})),
            Some((Value::Null, invalid))
        );
        assert_eq!(
            code(json!({"jsonrpc": "2.0", "id": "x", "method": 3})),
            Some((json!("x"), invalid))
        );
        assert_eq!(
            code(json!({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": [1]})),
            Some((json!(2), invalid))
        );
    }

    #[test]
    fn the_version_is_the_clients_when_spoken_else_the_newest() {
        for version in ProtocolVersion::ALL {
            assert_eq!(ProtocolVersion::negotiate(Some(version.as_str())), version);
        }
        assert_eq!(
            ProtocolVersion::negotiate(Some("1999-01-01")),
            ProtocolVersion::LATEST
        );
        assert_eq!(ProtocolVersion::negotiate(None), ProtocolVersion::LATEST);
        assert!(!ProtocolVersion::V2024_11_05.structured_content());
        assert!(ProtocolVersion::V2025_06_18.structured_content());
    }
}
