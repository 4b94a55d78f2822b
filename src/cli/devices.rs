use super::Ctx;
use anyhow::Result;
use neuroport::io::table::aligned;

#[derive(clap::Args)]
pub struct Args {
    /// Print JSON instead of a table
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let inv = ctx.inventory();
    // --backend was accepted and every device listed whatever it named; now the devices it runs
    // on, as check and bench read it (the default, auto, is every device).
    let spec = ctx.backend_or_all();
    let infos = inv.infos_for(&spec)?;
    // Why a backend lists nothing matters where every backend was asked for.
    let notes: &[String] = if spec == neuroport::BackendSpec::All { &inv.notes } else { &[] };
    if a.json {
        // Report rows leave the identity out; here it is what a user matches with nvidia-smi.
        let devices: Vec<serde_json::Value> = infos
            .iter()
            .map(|i| {
                let mut v = serde_json::to_value(i)?;
                v["pci"] = i.id.pci.map(|p| p.to_string()).into();
                v["uuid"] = i.id.uuid_hex().into();
                Ok(v)
            })
            .collect::<Result<_>>()?;
        let v = serde_json::json!({ "devices": devices, "notes": notes });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(0);
    }
    let rows: Vec<Vec<String>> = infos
        .iter()
        .map(|i| {
            vec![
                i.backend.clone(),
                i.spec.clone(),
                i.name.clone(),
                i.vendor.clone(),
                i.compute_units.to_string(),
                format!("{} MHz", i.clock_mhz),
                format!("{:.1} GiB", i.global_mem_bytes as f64 / (1u64 << 30) as f64),
                if i.image_support { "yes" } else { "no" }.into(),
                i.id.pci.map_or("-".into(), |p| p.to_string()),
            ]
        })
        .collect();
    print!("{}", aligned(&["backend", "spec", "name", "vendor", "units", "clock", "memory", "images", "pci"], &rows));
    for n in notes {
        println!("{n}");
    }
    Ok(0)
}
