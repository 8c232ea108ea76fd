//! What a stack creation would supply: parameter values, the pseudo parameters, and the
//! values of other resources and stacks that a template can only refer to.

use std::collections::BTreeMap;

/// The values a template is rendered with. `Default` is a stack named `stack` in
/// us-east-1 of account 123456789012 (the account number AWS's documentation uses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inputs {
    /// Given parameter values (`ParameterKey=…,ParameterValue=…`), as text.
    pub parameters: BTreeMap<String, String>,
    pub region: String,
    pub stack_name: String,
    /// `AWS::StackId`; made from the region, account and stack name when not given.
    pub stack_id: Option<String>,
    pub account_id: String,
    /// `Resource` → the resource's `Ref` value; `Resource.Attribute` → `Fn::GetAtt`.
    pub attributes: BTreeMap<String, String>,
    /// Export name → value, for `Fn::ImportValue`.
    pub exports: BTreeMap<String, String>,
    /// What `Fn::GetAZs` gives for the stack's region; the account decides it, so when
    /// not given it is the region's zones a, b and c.
    pub availability_zones: Option<Vec<String>>,
}

impl Default for Inputs {
    fn default() -> Inputs {
        Inputs {
            parameters: BTreeMap::new(),
            region: "us-east-1".into(),
            stack_name: "stack".into(),
            stack_id: None,
            account_id: "123456789012".into(),
            attributes: BTreeMap::new(),
            exports: BTreeMap::new(),
            availability_zones: None,
        }
    }
}

impl Inputs {
    /// `AWS::Partition`: from the region's name.
    pub fn partition(&self) -> &'static str {
        if self.region.starts_with("cn-") {
            "aws-cn"
        } else if self.region.starts_with("us-gov-") {
            "aws-us-gov"
        } else {
            "aws"
        }
    }

    /// `AWS::URLSuffix`.
    pub fn url_suffix(&self) -> &'static str {
        if self.region.starts_with("cn-") { "amazonaws.com.cn" } else { "amazonaws.com" }
    }

    /// `AWS::StackId`: the given one, or an ARN of the stack's form with a zero UUID.
    pub fn stack_id(&self) -> String {
        self.stack_id.clone().unwrap_or_else(|| {
            format!(
                "arn:{}:cloudformation:{}:{}:stack/{}/00000000-0000-0000-0000-000000000000",
                self.partition(),
                self.region,
                self.account_id,
                self.stack_name
            )
        })
    }

    /// `Fn::GetAZs` for `region`.
    pub fn availability_zones(&self, region: &str) -> Vec<String> {
        match &self.availability_zones {
            Some(zones) if region == self.region => zones.clone(),
            _ => ["a", "b", "c"].iter().map(|zone| format!("{region}{zone}")).collect(),
        }
    }
}
