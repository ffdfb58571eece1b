//! `workers`: workers' broker identities issued, listed and revoked through RabbitMQ's
//! management API.

use std::process::ExitCode;

use anyhow::Result;
use farm_coordinator::worker_identities::Management;

use crate::{ManagementArgs, WorkersCommand};

impl ManagementArgs {
    fn management(&self) -> anyhow::Result<Management> {
        anyhow::ensure!(
            !self.admin_password.is_empty(),
            "set FARM_RABBITMQ_ADMIN_PASSWORD to the password of RabbitMQ's administrator {:?}",
            self.admin_user
        );
        Ok(Management::new(&self.management, &self.admin_user, &self.admin_password, &self.vhost))
    }
}

/// Does `command`.
pub async fn workers(command: WorkersCommand) -> Result<ExitCode> {
    match command {
        WorkersCommand::Add { name, broker } => {
            let password = broker.management()?.add_worker(&name).await?;
            eprintln!(
                "worker {name} made, with the workers' rights on {:?}; its password (shown only this once) is on \
                 stdout: run it with worker_id = {name:?} and amqp_url = amqp://{name}:PASSWORD@HOST:5672/VHOST",
                broker.vhost
            );
            println!("{password}");
        }
        WorkersCommand::List { broker } => {
            for worker in broker.management()?.workers().await? {
                println!("{}\t{} connections", worker.name, worker.connections);
            }
        }
        WorkersCommand::Revoke { name, broker } => {
            broker.management()?.revoke_worker(&name).await?;
            println!("worker {name} revoked: its user is deleted, and RabbitMQ closed its connections");
        }
    }
    Ok(ExitCode::SUCCESS)
}
