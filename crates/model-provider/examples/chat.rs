//! Smoke-tests an OpenAI-compatible endpoint through [`OpenAiCompatible`]
//! with both protocols (JSON-in-message with `json_mode`, then native tool
//! calling) and prints the transcript as JSON.
//!
//! ```text
//! cargo run -p earthverse-model-provider --example chat -- \
//!     http://127.0.0.1:8080/v1 gemma-3-270m [fold] [API_KEY_ENV]
//! ```
//!
//! `fold` sends the system prompt inside the first user message (Gemma).
//! ```text
//! ```

use earthverse_model_provider::{
    ChatModel, ChatRequest, Message, OpenAiCompatible, OpenAiConfig, ToolDefinition,
};
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let base_url = args
        .next()
        .ok_or("usage: chat BASE_URL MODEL [fold] [API_KEY_ENV]")?;
    let model_name = args
        .next()
        .ok_or("usage: chat BASE_URL MODEL [fold] [API_KEY_ENV]")?;
    let mut config = OpenAiConfig::local(model_name, base_url);
    let mut next = args.next();
    if next.as_deref() == Some("fold") {
        config.fold_system_into_user = true;
        next = args.next();
    }
    config.api_key_env = next;
    config.call_timeout = Duration::from_secs(300);
    let model = OpenAiCompatible::new(config)?;

    let system = "You are a scientific research agent. Reply with exactly one JSON object: \
either {\"action\":\"tool_call\",\"tool\":NAME,\"args\":{...},\"reason\":TEXT} or \
{\"action\":\"final_answer\",\"final_answer\":{...},\"evidence\":[]}. \
Tools: list_package_files(subdir), read_text_file(path).";
    let task =
        "Task: the package holds data/event_reports/anchor.json. What is the event start date? \
Start by listing the package files.";
    let mut transcript = Vec::new();

    let mut request = ChatRequest::new(vec![Message::system(system), Message::user(task)]);
    request.json_mode = true;
    request.sampling.temperature = Some(0.0);
    request.sampling.max_tokens = Some(256);
    request.deadline = Some(Instant::now() + Duration::from_secs(600));
    let wire = model.request_body(&request);
    let reply = model.chat(request).await?;
    transcript.push(json!({"protocol": "json_in_message", "request": wire, "response": reply}));

    let mut request = ChatRequest::new(vec![
        Message::system("You are a scientific research agent. Use the tools."),
        Message::user(task),
    ]);
    request.tools = vec![ToolDefinition {
        name: "list_package_files".into(),
        description: "List the files of the event package.".into(),
        parameters: json!({"type": "object", "properties": {"subdir": {"type": "string"}}}),
    }];
    request.sampling.temperature = Some(0.0);
    request.sampling.max_tokens = Some(256);
    let wire = model.request_body(&request);
    let reply = model.chat(request).await?;
    transcript.push(json!({"protocol": "native_tools", "request": wire, "response": reply}));

    println!("{}", serde_json::to_string_pretty(&transcript)?);
    Ok(())
}
