fn area(width: f64, height: f64) -> f64 {
    width * height
}

fn perimeter(width: f64, height: f64) -> f64 {
    2.0 * (width + height)
}

fn main() {
    println!("{}", area(3.0, 4.0));
}
